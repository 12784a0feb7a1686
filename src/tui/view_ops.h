/* view_ops.h — what every surface of the TUI is to the code that shows it (as tig's
 * view_ops, htop's Panel): a name, the key-table context of its bindings, where it
 * goes and the room it needs, and its functions over its own state (draw it, run one
 * of its actions, say why an action would do nothing now). One interface for three
 * kinds:
 *   panes     Conversation, Tokens, Attention: bordered rectangles that layout.c
 *             places; tui.c holds one view_handle per pane, draws it and sends it the
 *             actions of its bindings.
 *   overlays  the help, the compute and the experts views: a stack over the panes
 *             (overlays.c, one table row each), the top one drawn last and handed
 *             every key first.
 *   views in a pane  the Attention pane's views (attention_views.c, one table row
 *             each, cycled by v / V), drawn inside the pane's border from the pane's
 *             cursor.
 * A field a kind does not use is 0 or NULL; each says which kinds read it. Rows are
 * written with designated initializers ({.name = "compute view", .draw = ...}). */
#ifndef LLMCHAT_TUI_VIEW_OPS_H
#define LLMCHAT_TUI_VIEW_OPS_H

#include <stdbool.h>

#include "draw.h"
#include "keys.h"
#include "selection.h"
#include "source.h"

/* Where a surface is drawn. */
typedef enum {
    VIEW_PANE = 0, /* a bordered rectangle of layout.c's (the window tui.c gives it) */
    VIEW_IN_PANE,  /* inside its pane's border, in the pane's window */
    VIEW_SCREEN,   /* the whole screen above the status line, over the panes, which
                      are not drawn under it; the input line waits below it, empty */
    VIEW_CENTRED,  /* a window of its own size (size), centred over a frame drawn
                      afresh under it */
} view_place;

/* What a surface with state of its own is made with (new), once when the TUI starts. */
typedef struct {
    const tui_source *src;  /* the engine or the trace, as the panes read it */
    tui_selection *sel;     /* the selected position, shared */
    const tui_screen *scr;  /* the screen: its size, UTF-8, colours */
    void *host;             /* a view in a pane: its pane's state that the views share
                               (the Attention pane's attn_cursor); else NULL */
    struct patch_board *patch; /* the patching grid the controller runs or a trace holds
                                  (the patching view's; patch_board.h) */
} view_env;

typedef struct {
    /* a pane's title, an overlay's name as the status line says it ("compute view"),
     * a view's name as v cycles it and the help names it ("lens grid") */
    const char *name;
    keys_context keys; /* where its bindings are in the key table (a view in a pane:
                          its pane's) */
    view_place place;
    /* an overlay: the screen it needs (columns x rows, the status and input lines
     * included); below that it does not open and is not drawn */
    int min_cols, min_rows;
    /* an overlay: a key that is not one of its bindings, or one its act does not take,
     * closes it (Esc and Ctrl-C then still stop the reply). Not modal: a binding of its
     * own that its act does not take runs as the controller's (the compute view's p and
     * n), a key with no binding of its own as the Anywhere bindings say */
    bool modal;

    /* Its own state, made once (new) and freed at the end (free); NULL when it keeps
     * none: a view in a pane is then handed env->host as its state. The panes are made
     * by tui.c, each with its own arguments. */
    void *(*new)(const view_env *env);
    void (*free)(void *state);
    /* An overlay put on the stack: it starts over (the compute view at the selected
     * position, the help at its first page). May be NULL. */
    void (*open)(void *state);
    /* An overlay: why it cannot open now, as the status line says it ("experts: this
     * model has no mixture of experts"); NULL when it can. May be NULL (it always
     * can). */
    const char *(*why_closed)(void *state);
    /* An overlay after one of its actions: is it still open? NULL: it stays open until
     * a key it does not take closes it (modal). */
    bool (*is_open)(const void *state);
    /* VIEW_CENTRED: its size on scr (0 rows: nothing to draw). */
    void (*size)(void *state, const tui_screen *scr, int *rows, int *cols);

    /* Draws the state into w: a pane its border too (focused: the border stands out),
     * a view in a pane inside the border, an overlay the whole window. */
    void (*draw)(void *state, WINDOW *w, const tui_screen *scr, bool focused);
    /* Runs action a; false when a is not one of its actions (the one showing it runs
     * it, or says nothing happens). May be NULL (a view in a pane whose keys are all
     * its pane's). */
    bool (*act)(void *state, key_action a);
    /* Why action a would change nothing now, as the status line says it ("already at
     * the first position"); NULL when it would do something. May be NULL. */
    const char *(*why_not)(void *state, key_action a);
} view_ops;

/* A surface shown: its functions and its state. */
typedef struct {
    const view_ops *ops;
    void *state;
} view_handle;

#endif
