/* Start marker for programs that cannot print one themselves (a compiler, a compressor):
 * loaded with LD_PRELOAD, it writes "TK_START\n" to stdout with one write(2) before main,
 * but only in a process whose executable's base name equals $TK_MARKER_EXE, so that the
 * wrappers that also inherit LD_PRELOAD (tierkit, /usr/bin/time) stay silent. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void tk_marker(void)
{
    const char *want = getenv("TK_MARKER_EXE");
    char exe[4096];
    ssize_t n;
    const char *base;
    static const char line[] = "TK_START\n";

    if (want == NULL)
        return;
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strcmp(base, want) != 0)
        return;
    if (write(STDOUT_FILENO, line, sizeof line - 1) != (ssize_t)(sizeof line - 1))
        return; /* no marker: the recording never starts, which the recorder reports */
}
