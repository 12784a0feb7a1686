/* test_command.c — the slash-command table and parser shared by the REPL and the TUI:
 * names, aliases, blanks around names and arguments, lines that are not commands,
 * unknown names; /help's descriptions; command_run's refusals and dispatch through a
 * recording host (what both front ends hear is the same words); and the table against
 * the man page's CHAT COMMANDS section (man/llmchat.1 under LLMCHAT_SRCDIR), both
 * ways. */
#include <string.h>

#include "command.h"
#include "testutil.h"

static command_call parse(const char *text, bool *is_command)
{
    static char line[256];
    snprintf(line, sizeof line, "%s", text);
    command_call c;
    memset(&c, 0, sizeof c);
    *is_command = command_parse(line, &c);
    return c;
}

START_TEST(test_names_and_aliases)
{
    bool is;
    command_call c = parse("/quit", &is);
    ck_assert(is);
    ck_assert_int_eq(c.id, CMD_QUIT);
    ck_assert_str_eq(c.arg, "");
    ck_assert_int_eq(parse("/exit", &is).id, CMD_QUIT);
    ck_assert_int_eq(parse("/q", &is).id, CMD_QUIT);
    ck_assert_int_eq(parse("/help", &is).id, CMD_HELP);
    ck_assert_int_eq(parse("/reset", &is).id, CMD_RESET);
    ck_assert_int_eq(parse("/force x", &is).id, CMD_FORCE);
    /* no prefixes, no case folding */
    ck_assert_int_eq(parse("/qu", &is).id, CMD_UNKNOWN);
    ck_assert_int_eq(parse("/Quit", &is).id, CMD_UNKNOWN);
    ck_assert_int_eq(parse("/quitting", &is).id, CMD_UNKNOWN);
}
END_TEST

START_TEST(test_blanks)
{
    bool is;
    command_call c = parse("  /system   Be brief.  \t\r\n", &is);
    ck_assert(is);
    ck_assert_int_eq(c.id, CMD_SYSTEM);
    ck_assert_str_eq(c.name, "system");
    ck_assert_str_eq(c.arg, "Be brief.");
    c = parse("/save\tout file.txt", &is);
    ck_assert_int_eq(c.id, CMD_SAVE);
    ck_assert_str_eq(c.arg, "out file.txt"); /* inner blanks stay */
    c = parse("/system   ", &is);
    ck_assert_int_eq(c.id, CMD_SYSTEM);
    ck_assert_str_eq(c.arg, "");
    c = parse("/reset\n", &is);
    ck_assert_int_eq(c.id, CMD_RESET);
    ck_assert_str_eq(c.name, "reset");
}
END_TEST

START_TEST(test_not_commands_and_unknown)
{
    bool is;
    parse("Tell me a story about /dev/null", &is);
    ck_assert(!is);
    parse("", &is);
    ck_assert(!is);
    parse("   ", &is);
    ck_assert(!is);
    command_call c = parse("/frobnicate now", &is);
    ck_assert(is);
    ck_assert_int_eq(c.id, CMD_UNKNOWN);
    ck_assert_ptr_null(c.info);
    ck_assert_str_eq(c.name, "frobnicate");
    ck_assert_str_eq(c.arg, "now");
    c = parse("/", &is);
    ck_assert(is);
    ck_assert_int_eq(c.id, CMD_UNKNOWN);
    ck_assert_str_eq(c.name, "");
}
END_TEST

START_TEST(test_table)
{
    int n;
    const command_info *t = command_table(&n);
    ck_assert_int_ge(n, 6);
    for (int i = 0; i < n; i++) {
        ck_assert_ptr_eq(command_find(t[i].name), &t[i]);
        ck_assert_int_ne(t[i].id, CMD_UNKNOWN);
        ck_assert_msg(t[i].front_ends != 0, "/%s runs nowhere", t[i].name);
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(t[i].id, t[j].id);
    }
    char buf[256];
    command_usage(command_find("system"), buf, sizeof buf);
    ck_assert_str_eq(buf, "/system TEXT");
    command_usage(command_find("help"), buf, sizeof buf);
    ck_assert_str_eq(buf, "/help");
    command_describe(command_find("quit"), buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "also /exit, /q"));
    command_describe(command_find("force"), buf, sizeof buf);
    ck_assert_ptr_nonnull(strstr(buf, "only in the TUI"));
    command_describe(command_find("reset"), buf, sizeof buf);
    ck_assert_ptr_null(strstr(buf, "only in"));
}
END_TEST

/* The text of the man page's CHAT COMMANDS section, and the names its items list. */
static void man_commands(char *text, size_t size, char names[][32], int *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/man/llmchat.1", source_dir());
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[1024];
    bool in = false;
    size_t o = 0;
    *n = 0;
    text[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, ".Sh ", 4)) {
            in = !strcmp(line, ".Sh CHAT COMMANDS\n");
            continue;
        }
        if (!in)
            continue;
        o += (size_t)snprintf(text + o, o < size ? size - o : 0, "%s", line);
        char name[32];
        if (sscanf(line, ".It Ic /%31[^ \n]", name) == 1 && *n < 32)
            snprintf(names[(*n)++], 32, "%s", name);
    }
    fclose(f);
}

/* A host that records what the commands say and ask for. */
typedef struct {
    char said[8][256];
    int n_said, quits, helps, forces, read_onlys;
    char forced[64];
} recorder;

static void rec_say(command_host *h, const char *text)
{
    recorder *r = h->user;
    if (r->n_said < 8)
        snprintf(r->said[r->n_said++], sizeof r->said[0], "%s", text);
}
static void rec_quit(command_host *h) { ((recorder *)h->user)->quits++; }
static void rec_help(command_host *h) { ((recorder *)h->user)->helps++; }
static void rec_read_only(command_host *h) { ((recorder *)h->user)->read_onlys++; }
static void rec_force(command_host *h, const char *text)
{
    recorder *r = h->user;
    r->forces++;
    snprintf(r->forced, sizeof r->forced, "%s", text);
}
static void rec_changed(command_host *h, command_change what) { (void)h, (void)what; }

static void run_line(command_host *h, const char *text)
{
    bool is;
    command_call c = parse(text, &is);
    ck_assert(is);
    command_run(h, &c);
}

START_TEST(test_run_refusals_and_dispatch)
{
    int n;
    const command_info *t = command_table(&n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(t[i].run != NULL, "/%s has no handler", t[i].name);

    recorder r;
    memset(&r, 0, sizeof r);
    /* the REPL's host with no chat: what needs a model is refused before its handler */
    command_host h = {.front_end = COMMAND_REPL, .user = &r, .say = rec_say, .quit = rec_quit,
                      .help = rec_help, .changed = rec_changed};
    run_line(&h, "/frobnicate now");
    ck_assert_str_eq(r.said[0], "unknown command /frobnicate (try /help)");
    run_line(&h, "/force hello");
    ck_assert_str_eq(r.said[1], "/force works only in the TUI");
    run_line(&h, "/reset");
    ck_assert_str_eq(r.said[2], "read-only: viewing a trace");
    run_line(&h, "/q");
    run_line(&h, "/help");
    ck_assert_int_eq(r.quits, 1);
    ck_assert_int_eq(r.helps, 1);
    ck_assert_int_eq(r.n_said, 3);

    /* the TUI's host: /force reaches its force, the read-only refusal its own */
    memset(&r, 0, sizeof r);
    h.front_end = COMMAND_TUI;
    h.force = rec_force;
    h.read_only = rec_read_only;
    run_line(&h, "/set temperature 0");
    ck_assert_int_eq(r.read_onlys, 1);
    ck_assert_int_eq(r.n_said, 0);
}
END_TEST

START_TEST(test_table_in_man_page)
{
    static char text[20000];
    char names[32][32];
    int n_man, n;
    man_commands(text, sizeof text, names, &n_man);
    ck_assert_int_gt(n_man, 0);
    const command_info *t = command_table(&n);
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int k = 0; k < n_man; k++)
            found = found || !strcmp(names[k], t[i].name);
        ck_assert_msg(found, "/%s is not an item of the man page's CHAT COMMANDS", t[i].name);
        /* each alias is named in the section's text */
        for (const char *p = t[i].aliases; p && *p;) {
            size_t w = strcspn(p, " ");
            char alias[40];
            snprintf(alias, sizeof alias, "Ic /%.*s", (int)w, p);
            ck_assert_msg(strstr(text, alias) != NULL, "the man page's CHAT COMMANDS does not name /%.*s", (int)w, p);
            p += w;
            p += strspn(p, " ");
        }
    }
    for (int k = 0; k < n_man; k++)
        ck_assert_msg(command_find(names[k]) != NULL, "the man page lists /%s, which the command table does not have",
                      names[k]);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("command");
    TCase *tc = tcase_create("command");
    tcase_add_test(tc, test_names_and_aliases);
    tcase_add_test(tc, test_blanks);
    tcase_add_test(tc, test_not_commands_and_unknown);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_run_refusals_and_dispatch);
    tcase_add_test(tc, test_table_in_man_page);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN(make_suite)
