/* Arithmetic in C's `long double`, which Redis uses for INCRBYFLOAT and
 * HINCRBYFLOAT. Rust has no long double type, so this tiny shim parses, adds and
 * formats exactly as Redis does (strtold, then "%.17Lf" with trailing zeros removed). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PION_LD_MAX_CHARS 5120

/* Parses `len` bytes at `s` like Redis's string2ld. Returns 1 on success. */
static int parse_ld(const char *s, size_t len, long double *out) {
    char buf[PION_LD_MAX_CHARS];
    char *end;
    long double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (memchr(buf, '\0', len) != NULL) return 0;
    errno = 0;
    v = strtold(buf, &end);
    if (isspace((unsigned char)buf[0]) || end[0] != '\0' || (size_t)(end - buf) != len ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) ||
        errno == EINVAL || isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* Returns the formatted length written to `out` (at most `cap` bytes), or
 * -1 when `cur` is not a float, -2 when `incr` is not a float, -3 when the result is
 * NaN or infinite. */
long pion_ld_add(const char *cur, size_t cur_len, const char *incr, size_t incr_len,
                 char *out, size_t cap) {
    long double a, b, r;
    char buf[PION_LD_MAX_CHARS];
    int n;
    if (!parse_ld(cur, cur_len, &a)) return -1;
    if (!parse_ld(incr, incr_len, &b)) return -2;
    r = a + b;
    if (isnan(r) || isinf(r)) return -3;
    n = snprintf(buf, sizeof(buf), "%.17Lf", r);
    if (n < 0 || (size_t)n + 1 > sizeof(buf)) return -3;
    if (strchr(buf, '.') != NULL) {
        char *p = buf + n - 1;
        while (*p == '0') { p--; n--; }
        if (*p == '.') n--;
    }
    if (n == 2 && buf[0] == '-' && buf[1] == '0') { buf[0] = '0'; n = 1; }
    if ((size_t)n > cap) return -3;
    memcpy(out, buf, (size_t)n);
    return n;
}
