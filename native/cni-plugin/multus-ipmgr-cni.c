/*
 * multus-ipmgr: the CNI plugin a runtime runs on the node, chained after ipvlan (docs/cni-plugin.md).
 *
 * A thin relay, built static, with no Node.js on the host: it answers VERSION itself, and sends every
 * other command to the node's bridge over a unix socket (one request per connection, the wire protocol of
 * docs/cni-plugin.md), then writes the bridge's answer to stdout and exits with the bridge's code. It reads
 * only the netconf's top-level keys socket, failOpen, deadlineSeconds, cniVersion and the raw text of
 * prevResult; everything else is the bridge's.
 *
 * When the bridge cannot be reached (connect fails, the connection closes before an answer, no answer in
 * time): ADD fails with code 11, or with failOpen passes prevResult on unchanged and warns on stderr; DEL
 * exits 0 (the spec: DEL does not fail for a missing resource; the bridge's view-based release catches
 * up); CHECK fails with code 11, or with failOpen exits 0.
 *
 * Errors of its own (CNI spec, "Error"): {"cniVersion","code","msg","details"} on stdout and exit 1, with
 * code 4 (invalid environment), 6 (stdin it cannot decode), 7 (an invalid netconf value) or 11 (try again
 * later: the bridge is unreachable).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_STDIN (1024 * 1024)
#define MAX_ANSWER (4 * 1024 * 1024)
#define MAX_DEPTH 256
#define DEFAULT_SOCKET "/run/multus-ipmgr/cni/cni.sock"
#define DEFAULT_DEADLINE 30
#define MAX_DEADLINE 110
/* SO_RCVTIMEO: the bridge answers within deadlineSeconds; 10 s more for the answer to come back. */
#define ANSWER_SLACK 10

#define ERR_INVALID_ENV 4
#define ERR_DECODE 6
#define ERR_INVALID_NETCONF 7
#define ERR_TRY_AGAIN 11

/* A span of the netconf's text: [start, end). start is NULL when the key is absent. */
struct span {
    const char *start;
    const char *end;
};

struct netconf {
    struct span cni_version; /* the string token, quotes included */
    struct span socket;      /* any value */
    struct span fail_open;
    struct span deadline;
    struct span prev_result;
};

static char stdin_buf[MAX_STDIN + 1];
static size_t stdin_len;
/* The cniVersion of error results: the netconf's (its token, verbatim) or "1.0.0". */
static const char *err_version = "\"1.0.0\"";
static int err_version_len = 7;
/* DEL does not fail for a netconf value it cannot read: a NAD fixed or deleted since ADD must not leave the
 * runtime retrying DEL forever (the bridge's view-based release catches up). */
static int del_command;

/* ---------------------------------------------------------------- output */

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Appends s to out as the inside of a JSON string: quotes, backslashes and control bytes escaped. */
static size_t json_escape(char *out, size_t cap, const char *s) {
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
    return n;
}

static const char *error_msg(int code) {
    switch (code) {
    case ERR_INVALID_ENV: return "Invalid environment variables";
    case ERR_DECODE: return "Failed to decode content";
    case ERR_INVALID_NETCONF: return "Invalid network config";
    default: return "Try again later";
    }
}

/* Writes a CNI error result with the details formatted, and exits 1. */
static void fail(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void fail(int code, const char *fmt, ...) {
    static char details[8192];
    static char escaped[6 * sizeof details + 1];
    static char out[sizeof escaped + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(details, sizeof details, fmt, ap);
    va_end(ap);
    if (del_command && code == ERR_INVALID_NETCONF) {
        fprintf(stderr, "multus-ipmgr: warning: DEL: %s; the bridge releases the address from its view of the cluster\n",
                details);
        exit(0);
    }
    json_escape(escaped, sizeof escaped, details);
    int n = snprintf(out, sizeof out, "{\"cniVersion\":%.*s,\"code\":%d,\"msg\":\"%s\",\"details\":\"%s\"}\n",
                     err_version_len, err_version, code, error_msg(code), escaped);
    write_all(1, out, (size_t)n);
    exit(1);
}

/* ---------------------------------------------------------------- the JSON scanner */

/*
 * A validating scanner of RFC 8259 JSON, as strict as JSON.parse: it accepts exactly what JSON.parse
 * accepts (but for nesting deeper than MAX_DEPTH), and records the spans of the top-level keys it reads.
 * Duplicate keys: the last one counts, as in JSON.parse.
 */
struct scanner {
    const char *p;
    const char *end;
};

static void skip_ws(struct scanner *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* s->p at the opening quote; on success s->p is past the closing quote. */
static int scan_string(struct scanner *s) {
    s->p++;
    while (s->p < s->end) {
        unsigned char c = (unsigned char)*s->p++;
        if (c == '"') return 0;
        if (c < 0x20) return -1;
        if (c != '\\') continue;
        if (s->p >= s->end) return -1;
        c = (unsigned char)*s->p++;
        if (c == 'u') {
            if (s->end - s->p < 4) return -1;
            for (int i = 0; i < 4; i++)
                if (hex_value(s->p[i]) < 0) return -1;
            s->p += 4;
        } else if (!strchr("\"\\/bfnrt", c) || c == '\0') {
            return -1;
        }
    }
    return -1;
}

static int scan_digits(struct scanner *s) {
    const char *start = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    return s->p > start ? 0 : -1;
}

static int scan_number(struct scanner *s) {
    if (*s->p == '-') s->p++;
    if (s->p >= s->end) return -1;
    if (*s->p == '0') {
        s->p++;
    } else if (scan_digits(s) < 0) {
        return -1;
    }
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (scan_digits(s) < 0) return -1;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
        if (scan_digits(s) < 0) return -1;
    }
    return 0;
}

static int scan_literal(struct scanner *s, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return -1;
    s->p += n;
    return 0;
}

static int scan_value(struct scanner *s, int depth);

/* s->p at '{' or '['. With keys (the top level only), records the spans of the keys the plugin reads. */
static int scan_container(struct scanner *s, int depth, struct netconf *keys);

static int scan_value(struct scanner *s, int depth) {
    skip_ws(s);
    if (s->p >= s->end) return -1;
    switch (*s->p) {
    case '"': return scan_string(s);
    case '{':
    case '[': return scan_container(s, depth + 1, NULL);
    case 't': return scan_literal(s, "true");
    case 'f': return scan_literal(s, "false");
    case 'n': return scan_literal(s, "null");
    default:
        if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9')) return scan_number(s);
        return -1;
    }
}

/*
 * Decodes the JSON string token [start, end) (quotes included, already validated) into out, UTF-8.
 * Returns its length, or -1 when it does not fit in cap - 1 bytes. A \u0000 decodes to a NUL byte.
 */
static long decode_string(struct span tok, char *out, size_t cap) {
    size_t n = 0;
    const char *p = tok.start + 1, *end = tok.end - 1;
    while (p < end) {
        unsigned long cp;
        if (*p != '\\') {
            if (n + 1 >= cap) return -1;
            out[n++] = *p++;
            continue;
        }
        p++;
        char e = *p++;
        if (e != 'u') {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            if (n + 1 >= cap) return -1;
            out[n++] = to[strchr(from, e) - from];
            continue;
        }
        cp = (unsigned long)(hex_value(p[0]) << 12 | hex_value(p[1]) << 8 | hex_value(p[2]) << 4 | hex_value(p[3]));
        p += 4;
        if (cp >= 0xd800 && cp <= 0xdbff && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
            unsigned long lo = (unsigned long)(hex_value(p[2]) << 12 | hex_value(p[3]) << 8 |
                                               hex_value(p[4]) << 4 | hex_value(p[5]));
            if (lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            }
        }
        if (n + 4 >= cap) return -1;
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else if (cp < 0x800) {
            out[n++] = (char)(0xc0 | cp >> 6);
            out[n++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out[n++] = (char)(0xe0 | cp >> 12);
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            out[n++] = (char)(0xf0 | cp >> 18);
            out[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    out[n] = '\0';
    return (long)n;
}

static void record_key(struct netconf *keys, struct span key, struct span value) {
    char name[32];
    long n = decode_string(key, name, sizeof name);
    if (n < 0 || (size_t)n != strlen(name)) return; /* too long or holding a NUL: none of ours */
    if (strcmp(name, "cniVersion") == 0) keys->cni_version = value;
    else if (strcmp(name, "socket") == 0) keys->socket = value;
    else if (strcmp(name, "failOpen") == 0) keys->fail_open = value;
    else if (strcmp(name, "deadlineSeconds") == 0) keys->deadline = value;
    else if (strcmp(name, "prevResult") == 0) keys->prev_result = value;
}

static int scan_container(struct scanner *s, int depth, struct netconf *keys) {
    if (depth > MAX_DEPTH) return -1;
    char close = *s->p == '{' ? '}' : ']';
    s->p++;
    skip_ws(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return 0;
    }
    for (;;) {
        struct span key = {NULL, NULL};
        if (close == '}') {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '"') return -1;
            key.start = s->p;
            if (scan_string(s) < 0) return -1;
            key.end = s->p;
            skip_ws(s);
            if (s->p >= s->end || *s->p++ != ':') return -1;
        }
        skip_ws(s);
        struct span value = {s->p, NULL};
        if (scan_value(s, depth) < 0) return -1;
        value.end = s->p;
        if (keys && key.start) record_key(keys, key, value);
        skip_ws(s);
        if (s->p >= s->end) return -1;
        char c = *s->p++;
        if (c == close) return 0;
        if (c != ',') return -1;
    }
}

/* Scans the whole of stdin: one JSON object, whitespace around it. */
static const char *scan_netconf(struct netconf *keys) {
    struct scanner s = {stdin_buf, stdin_buf + stdin_len};
    memset(keys, 0, sizeof *keys);
    skip_ws(&s);
    if (s.p >= s.end) return "stdin is empty: the runtime passes the network configuration as a JSON object";
    if (*s.p != '{') {
        if (scan_value(&s, 0) < 0) return "stdin is not valid JSON";
        return "stdin is JSON, but not an object: the network configuration is a JSON object";
    }
    if (scan_container(&s, 1, keys) < 0) return "stdin is not valid JSON (or nested deeper than 256 levels)";
    skip_ws(&s);
    if (s.p != s.end) return "stdin is not valid JSON: text after the object";
    return NULL;
}

static int span_is(struct span v, const char *word) {
    size_t n = strlen(word);
    return v.start && (size_t)(v.end - v.start) == n && memcmp(v.start, word, n) == 0;
}

/* The value's text, for messages: at most 64 bytes of it. */
static const char *shown(struct span v) {
    static char buf[80];
    size_t n = (size_t)(v.end - v.start);
    if (n > 64) snprintf(buf, sizeof buf, "%.64s...", v.start);
    else snprintf(buf, sizeof buf, "%.*s", (int)n, v.start);
    return buf;
}

/* ---------------------------------------------------------------- the netconf's values */

struct settings {
    char socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int fail_open;
    int deadline;
};

static void read_settings(const struct netconf *keys, struct settings *out) {
    if (keys->cni_version.start && *keys->cni_version.start != '"')
        fail(ERR_INVALID_NETCONF, "cniVersion is %s: a string, such as \"1.0.0\"", shown(keys->cni_version));

    strcpy(out->socket, DEFAULT_SOCKET);
    if (keys->socket.start) {
        if (*keys->socket.start != '"')
            fail(ERR_INVALID_NETCONF, "socket is %s: a string, the path of the bridge's unix socket (default %s)",
                 shown(keys->socket), DEFAULT_SOCKET);
        long n = decode_string(keys->socket, out->socket, sizeof out->socket);
        if (n < 0)
            fail(ERR_INVALID_NETCONF, "socket is longer than %zu bytes, the most a unix socket's path holds: %s",
                 sizeof out->socket - 1, shown(keys->socket));
        if (n == 0) fail(ERR_INVALID_NETCONF, "socket is empty: leave it out for %s", DEFAULT_SOCKET);
        if ((size_t)n != strlen(out->socket))
            fail(ERR_INVALID_NETCONF, "socket %s holds a NUL character: a path cannot", shown(keys->socket));
    }

    out->fail_open = 0;
    if (keys->fail_open.start) {
        if (span_is(keys->fail_open, "true")) out->fail_open = 1;
        else if (!span_is(keys->fail_open, "false"))
            fail(ERR_INVALID_NETCONF, "failOpen is %s: true or false (default false)", shown(keys->fail_open));
    }

    out->deadline = DEFAULT_DEADLINE;
    if (keys->deadline.start) {
        char num[512];
        size_t n = (size_t)(keys->deadline.end - keys->deadline.start);
        char c = *keys->deadline.start;
        double d = 0;
        int number = (c == '-' || (c >= '0' && c <= '9')) && n < sizeof num;
        if (number) {
            memcpy(num, keys->deadline.start, n);
            num[n] = '\0';
            d = strtod(num, NULL);
        }
        if (!number || !(d >= 1 && d <= MAX_DEADLINE) || d != (double)(int)d)
            fail(ERR_INVALID_NETCONF, "deadlineSeconds is %s: a whole number of seconds from 1 to %d (default %d)",
                 shown(keys->deadline), MAX_DEADLINE, DEFAULT_DEADLINE);
        out->deadline = (int)d;
    }
}

/* ---------------------------------------------------------------- the bridge */

static const char *const ENV_LINES[] = {"CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"};

/* The answer: the exit code and the body, or why there is none (cause set). */
struct answer {
    int code;
    const char *body;
    size_t body_len;
    char cause[256];
};

static char answer_buf[MAX_ANSWER + 1];

static int ask_bridge(const struct settings *cfg, struct answer *a) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, cfg->socket);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(a->cause, sizeof a->cause, "socket(): %s", strerror(errno));
        return -1;
    }
    struct timeval tv = {cfg->deadline + ANSWER_SLACK, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        snprintf(a->cause, sizeof a->cause, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }

    static char head[8 * 4096];
    size_t n = (size_t)snprintf(head, sizeof head, "MULTUS-IPMGR-CNI 1\n");
    for (size_t i = 0; i < sizeof ENV_LINES / sizeof *ENV_LINES; i++) {
        const char *v = getenv(ENV_LINES[i]);
        int w = snprintf(head + n, sizeof head - n, "%s=%s\n", ENV_LINES[i], v ? v : "");
        if (w < 0 || (size_t)w >= sizeof head - n) {
            close(fd);
            fail(ERR_INVALID_ENV, "the CNI_ variables are longer than %zu bytes together", sizeof head);
        }
        n += (size_t)w;
    }
    head[n++] = '\n';
    if (write_all(fd, head, n) < 0 || write_all(fd, stdin_buf, stdin_len) < 0) {
        snprintf(a->cause, sizeof a->cause, "the connection failed while sending the request: %s", strerror(errno));
        close(fd);
        return -1;
    }
    shutdown(fd, SHUT_WR);

    size_t got = 0;
    for (;;) {
        if (got == MAX_ANSWER) {
            snprintf(a->cause, sizeof a->cause, "the answer is longer than %d bytes", MAX_ANSWER);
            close(fd);
            return -1;
        }
        ssize_t r = read(fd, answer_buf + got, MAX_ANSWER - got);
        if (r == 0) break;
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                snprintf(a->cause, sizeof a->cause, "no answer within %d s (deadlineSeconds %d + %d)",
                         cfg->deadline + ANSWER_SLACK, cfg->deadline, ANSWER_SLACK);
            else snprintf(a->cause, sizeof a->cause, "reading the answer: %s", strerror(errno));
            close(fd);
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    answer_buf[got] = '\0';

    char *nl = memchr(answer_buf, '\n', got);
    if (!nl) {
        snprintf(a->cause, sizeof a->cause, "the connection closed before an answer");
        return -1;
    }
    int code = 0;
    const char *p = answer_buf;
    int digits = 0;
    for (; p < nl && *p >= '0' && *p <= '9' && digits < 4; p++, digits++) code = code * 10 + (*p - '0');
    if (digits == 0 || p != nl || code > 255) {
        int shown_len = nl - answer_buf > 40 ? 40 : (int)(nl - answer_buf);
        snprintf(a->cause, sizeof a->cause, "the answer's first line is not an exit code: %.*s", shown_len, answer_buf);
        return -1;
    }
    a->code = code;
    a->body = nl + 1;
    a->body_len = got - (size_t)(nl + 1 - answer_buf);
    return 0;
}

/* ---------------------------------------------------------------- main */

static void read_stdin(void) {
    for (;;) {
        ssize_t r = read(0, stdin_buf + stdin_len, sizeof stdin_buf - stdin_len);
        if (r == 0) return;
        if (r < 0) {
            if (errno == EINTR) continue;
            fail(ERR_DECODE, "reading stdin: %s", strerror(errno));
        }
        stdin_len += (size_t)r;
        if (stdin_len > MAX_STDIN) fail(ERR_DECODE, "stdin is longer than %d bytes, the most this plugin reads", MAX_STDIN);
    }
}

static int all_whitespace(void) {
    for (size_t i = 0; i < stdin_len; i++)
        if (!strchr(" \t\r\n", stdin_buf[i]) || stdin_buf[i] == '\0') return 0;
    return 1;
}

static void check_env(const char *command) {
    if (!command || !*command)
        fail(ERR_INVALID_ENV, "CNI_COMMAND is not set: the runtime sets it to ADD, DEL, CHECK or VERSION");
    if (strcmp(command, "ADD") && strcmp(command, "DEL") && strcmp(command, "CHECK") && strcmp(command, "VERSION"))
        fail(ERR_INVALID_ENV, "CNI_COMMAND is \"%s\": this plugin knows ADD, DEL, CHECK and VERSION", command);
    for (size_t i = 0; i < sizeof ENV_LINES / sizeof *ENV_LINES; i++) {
        const char *v = getenv(ENV_LINES[i]);
        if (v && strchr(v, '\n')) fail(ERR_INVALID_ENV, "%s holds a newline: the runtime's values never do", ENV_LINES[i]);
    }
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const char *command = getenv("CNI_COMMAND");
    read_stdin();
    struct netconf keys;
    const char *scan_error = scan_netconf(&keys);
    if (!scan_error && keys.cni_version.start && *keys.cni_version.start == '"') {
        err_version = keys.cni_version.start;
        err_version_len = (int)(keys.cni_version.end - keys.cni_version.start);
    }
    check_env(command);
    del_command = strcmp(command, "DEL") == 0;

    if (strcmp(command, "VERSION") == 0) {
        /* The runtime passes {"cniVersion": ...}; an empty stdin is fine too, as a person would run it. */
        if (scan_error && !all_whitespace()) fail(ERR_DECODE, "%s", scan_error);
        static const char version[] = "{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\"]}\n";
        return write_all(1, version, sizeof version - 1) < 0 ? 1 : 0;
    }
    if (scan_error) fail(ERR_DECODE, "%s", scan_error);

    struct settings cfg;
    read_settings(&keys, &cfg);

    struct answer a;
    if (ask_bridge(&cfg, &a) == 0) {
        if (write_all(1, a.body, a.body_len) < 0) return 1;
        return a.code;
    }

    /* The bridge is unreachable. */
    if (strcmp(command, "DEL") == 0) {
        fprintf(stderr, "multus-ipmgr: warning: DEL: the bridge at %s is unreachable (%s); the bridge releases the address "
                        "from its view of the cluster once it runs\n", cfg.socket, a.cause);
        return 0;
    }
    if (cfg.fail_open) {
        fprintf(stderr, "multus-ipmgr: warning: %s: the bridge at %s is unreachable (%s); failOpen: the pod starts "
                        "before EC2 routes its address, and the bridge catches up from the API\n", command, cfg.socket, a.cause);
        if (strcmp(command, "CHECK") == 0) return 0;
        if (!keys.prev_result.start)
            fail(ERR_INVALID_NETCONF, "there is no prevResult to pass on: chain multus-ipmgr after the plugin that makes the "
                                      "interface (ipvlan)");
        return write_all(1, keys.prev_result.start, (size_t)(keys.prev_result.end - keys.prev_result.start)) < 0 ? 1 : 0;
    }
    fail(ERR_TRY_AGAIN, "the bridge at %s is unreachable (%s): is the multus-ipmgr bridge running on this node, with "
                        "IPMGR_BRIDGE_CNI_SOCKET set to this path? (failOpen: true in the NAD starts the pod without it)",
         cfg.socket, a.cause);
}
