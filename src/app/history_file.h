/* history_file.h — a line editor's history (GNU readline's or libedit's list) written
 * to its file at the end of a session without losing lines: those of other sessions
 * that ended meanwhile (GNU readline: this session's lines are appended with O_APPEND,
 * then the file cut to the newest max_lines), and the file as it was when the disk is
 * full (an append cut short is taken back, unless another session appended since, so
 * no half line is left for the next one to be glued to; libedit, whose file is
 * rewritten whole in its own format, writes a temporary file and renames it). */
#ifndef LLMCHAT_APP_HISTORY_FILE_H
#define LLMCHAT_APP_HISTORY_FILE_H

/* Writes the newest n_added entries of the history list to path (the whole list with
 * libedit), keeping at most max_lines. Returns 0, or an errno (the file as it was). */
int history_file_save(const char *path, int n_added, int max_lines);

#endif
