/* pt-query-digest's fingerprint rules as single scans over the statement's code points.
 *
 * Each pass below is one of pt's regular expressions (QueryRewriter::fingerprint, Percona
 * Toolkit 3.2.1), with the meaning Python's `re` gives it on a str: \s and \b use Unicode
 * whitespace and word characters, and a case-insensitive ASCII letter also matches the code
 * points Unicode folds to it (U+0130/U+0131 for i, U+017F for s, U+212A for k). The regular
 * expressions themselves, which these passes must equal, are kept in tests/pt_rules.py and
 * compared with this code on fuzzed statements.
 *
 * Two rules stay in Python (fingerprint.py): the special statements read before everything else
 * (mysqldump, percona-toolkit, administrator commands, CALL) and the repeated-UNION rule, whose
 * back-reference is rare and not worth a scanner. Hence two entry points: core() runs the rules
 * up to the IN lists, tail() the LIMIT and ORDER BY ... ASC rules that come after UNION.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef Py_UCS4 ch_t;

/* A statement being rewritten: passes read `s` and write `out`, then the two are swapped. The
 * two buffers are kept between calls (the GIL is held throughout), unless a giant statement
 * made them large. */
typedef struct {
    ch_t *s, *out;
    Py_ssize_t n;
} Text;

static ch_t *buffers[2];
static Py_ssize_t capacity;
#define KEEP_CAPACITY (1 << 16)

static int text_reserve(Py_ssize_t need)
{
    if (need <= capacity)
        return 0;
    for (int k = 0; k < 2; k++) {
        ch_t *grown = PyMem_Realloc(buffers[k], need * sizeof(ch_t));
        if (grown == NULL)
            return -1;
        buffers[k] = grown;
    }
    capacity = need;
    return 0;
}

/* Room for any pass's output (only the IN list rule grows the text: `in()` -> `in(?+)`). */
static int text_load(Text *t, PyObject *str)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(str);
    if (text_reserve(2 * n + 16) < 0)
        return -1;
    t->s = buffers[0];
    t->out = buffers[1];
    if (PyUnicode_AsUCS4(str, t->s, capacity, 0) == NULL)
        return -1;
    t->n = n;
    return 0;
}

static void text_swap(Text *t, Py_ssize_t out_n)
{
    ch_t *tmp = t->s;
    t->s = t->out;
    t->out = tmp;
    t->n = out_n;
}

static void text_free(Text *t)
{
    (void)t;
    if (capacity > KEEP_CAPACITY) {
        PyMem_Free(buffers[0]);
        PyMem_Free(buffers[1]);
        buffers[0] = buffers[1] = NULL;
        capacity = 0;
    }
}

static PyObject *text_str(const Text *t)
{
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, t->s, t->n);
}

static inline int is_space(ch_t c)
{
    return c < 128 ? c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F)
                   : Py_UNICODE_ISSPACE(c);
}

static inline int is_word(ch_t c)
{
    if (c < 128)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
               || c == '_';
    return Py_UNICODE_ISALNUM(c);
}

/* Whether c matches the lower-case ASCII letter `lower` under re.IGNORECASE. */
static inline int fold_eq(ch_t c, char lower)
{
    if (c < 128)
        return (c | 0x20) == (ch_t)lower && lower >= 'a' && lower <= 'z' ? 1 : c == (ch_t)lower;
    return (lower == 'i' && (c == 0x130 || c == 0x131)) || (lower == 's' && c == 0x17F)
           || (lower == 'k' && c == 0x212A);
}

static int at_ci(const ch_t *s, Py_ssize_t n, Py_ssize_t i, const char *word)
{
    for (; *word; word++, i++)
        if (i >= n || !fold_eq(s[i], *word))
            return 0;
    return 1;
}

static int at(const ch_t *s, Py_ssize_t n, Py_ssize_t i, const char *word)
{
    for (; *word; word++, i++)
        if (i >= n || s[i] != (ch_t)(unsigned char)*word)
            return 0;
    return 1;
}

static int boundary(const ch_t *s, Py_ssize_t n, Py_ssize_t i)
{
    int before = i > 0 && is_word(s[i - 1]);
    int after = i < n && is_word(s[i]);
    return before != after;
}

static Py_ssize_t skip_space(const ch_t *s, Py_ssize_t n, Py_ssize_t i)
{
    while (i < n && is_space(s[i]))
        i++;
    return i;
}

/* \A((?:INSERT|REPLACE)(?: IGNORE)?\s+INTO.+?VALUES\s*\(.*?\))\s*,\s*\(  (i, s): the length of
 * group 1, or n when the statement is not a multi-row INSERT/REPLACE. */
static Py_ssize_t multi_insert(const ch_t *s, Py_ssize_t n)
{
    Py_ssize_t verb = at_ci(s, n, 0, "insert") ? 6 : at_ci(s, n, 0, "replace") ? 7 : 0;
    if (verb == 0)
        return n;
    for (int ignore = 1; ignore >= 0; ignore--) {
        Py_ssize_t j = verb;
        if (ignore) {
            if (!at_ci(s, n, j, " ignore"))
                continue;
            j += 7;
        }
        Py_ssize_t k = skip_space(s, n, j);
        if (k == j || !at_ci(s, n, k, "into"))
            continue;
        /* .+? then VALUES: the first VALUES( after at least one character. Which ) closes the
         * row depends only on what follows it, so if the first VALUES( has no ) followed by
         * `, (`, no later one has either. */
        for (Py_ssize_t p = k + 5; p + 6 <= n; p++) {
            if (!at_ci(s, n, p, "values"))
                continue;
            Py_ssize_t q = skip_space(s, n, p + 6);
            if (q >= n || s[q] != '(')
                continue;
            for (Py_ssize_t r = q + 1; r < n; r++) {
                if (s[r] != ')')
                    continue;
                Py_ssize_t t = skip_space(s, n, r + 1);
                if (t < n && s[t] == ',') {
                    t = skip_space(s, n, t + 1);
                    if (t < n && s[t] == '(')
                        return r + 1;
                }
            }
            break;
        }
    }
    return n;
}

/* /\*[^!].*?\*\/ (s) removed. */
static Py_ssize_t block_comments(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if (s[i] == '/' && i + 2 < n && s[i + 1] == '*' && s[i + 2] != '!') {
            Py_ssize_t e = i + 3;
            while (e + 1 < n && !(s[e] == '*' && s[e + 1] == '/'))
                e++;
            if (e + 1 < n) {
                i = e + 2;
                continue;
            }
            break; /* no closing mark: no later comment can close either */
        }
        out[o++] = s[i++];
    }
    while (i < n)
        out[o++] = s[i++];
    return o;
}

/* (?:--|#)[^'"\r\n]*(?=[\r\n]|\Z) removed. */
static Py_ssize_t line_comments(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        ch_t c = s[i];
        if (c == '#' || (c == '-' && i + 1 < n && s[i + 1] == '-')) {
            Py_ssize_t j = i + (c == '#' ? 1 : 2);
            while (j < n && s[j] != '\'' && s[j] != '"' && s[j] != '\r' && s[j] != '\n')
                j++;
            if (j == n || s[j] == '\r' || s[j] == '\n') {
                i = j;
                continue;
            }
            /* stopped by a quote: every start before it stops there too */
            while (i < j)
                out[o++] = s[i++];
            continue;
        }
        out[o++] = s[i++];
    }
    return o;
}

/* \A use \S+\Z (i) */
static int is_use(const ch_t *s, Py_ssize_t n)
{
    if (n < 5 || !at_ci(s, n, 0, "use") || s[3] != ' ')
        return 0;
    for (Py_ssize_t i = 4; i < n; i++)
        if (is_space(s[i]))
            return 0;
    return 1;
}

/* \\["'] removed. */
static Py_ssize_t escaped_quotes(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if (s[i] == '\\' && i + 1 < n && (s[i + 1] == '\'' || s[i + 1] == '"')) {
            i += 2;
            continue;
        }
        out[o++] = s[i++];
    }
    return o;
}

/* Q.*?Q (s) -> ? */
static Py_ssize_t quoted(const ch_t *s, Py_ssize_t n, ch_t *out, ch_t quote)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if (s[i] == quote) {
            Py_ssize_t j = i + 1;
            while (j < n && s[j] != quote)
                j++;
            if (j < n) {
                out[o++] = '?';
                i = j + 1;
                continue;
            }
            break;
        }
        out[o++] = s[i++];
    }
    while (i < n)
        out[o++] = s[i++];
    return o;
}

/* \bfalse\b|\btrue\b (i) -> ? */
static Py_ssize_t booleans(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        Py_ssize_t len = at_ci(s, n, i, "false") ? 5 : at_ci(s, n, i, "true") ? 4 : 0;
        if (len && boundary(s, n, i) && boundary(s, n, i + len)) {
            out[o++] = '?';
            i += len;
            continue;
        }
        out[o++] = s[i++];
    }
    return o;
}

static inline int number_start(ch_t c) { return (c >= '0' && c <= '9') || c == '+' || c == '-'; }

static inline int number_rest(ch_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '.' || c == 'x' || c == '+'
           || c == '-';
}

/* [0-9+-][0-9a-f.xb+-]* -> ?, then [xb.+-]\? -> ? */
static Py_ssize_t numbers(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if (number_start(s[i])) {
            i++;
            while (i < n && number_rest(s[i]))
                i++;
            out[o++] = '?';
            continue;
        }
        out[o++] = s[i++];
    }
    return o;
}

static Py_ssize_t number_tails(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        ch_t c = s[i];
        if ((c == 'x' || c == 'b' || c == '.' || c == '+' || c == '-') && i + 1 < n
            && s[i + 1] == '?') {
            out[o++] = '?';
            i += 2;
            continue;
        }
        out[o++] = s[i++];
    }
    return o;
}

/* lstrip(), chomp, [ \n\t\r\f]+ -> one space. */
static Py_ssize_t whitespace(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t i = 0, o = 0;
    while (i < n && is_space(s[i]))
        i++;
    if (n > i && s[n - 1] == '\n')
        n--;
    while (i < n) {
        ch_t c = s[i];
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f') {
            while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'
                             || s[i] == '\f'))
                i++;
            out[o++] = ' ';
            continue;
        }
        out[o++] = c;
        i++;
    }
    return o;
}

/* str.lower(): inline for ASCII, Python's own for the rest (it may change the length). */
static int lower(Text *t)
{
    Py_ssize_t i;
    for (i = 0; i < t->n && t->s[i] < 128; i++)
        if (t->s[i] >= 'A' && t->s[i] <= 'Z')
            t->s[i] |= 0x20;
    if (i == t->n)
        return 0;
    PyObject *str = text_str(t);
    if (str == NULL)
        return -1;
    PyObject *low = PyObject_CallMethod(str, "lower", NULL);
    Py_DECREF(str);
    if (low == NULL)
        return -1;
    int rc = text_load(t, low);
    Py_DECREF(low);
    return rc;
}

/* \bnull\b -> ? */
static Py_ssize_t nulls(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if (s[i] == 'n' && at(s, n, i, "null") && boundary(s, n, i) && boundary(s, n, i + 4)) {
            out[o++] = '?';
            i += 4;
            continue;
        }
        out[o++] = s[i++];
    }
    return o;
}

/* (?:[\s,]*\([\s?,]*\))+ from i: the end of the last list, or -1. */
static Py_ssize_t lists(const ch_t *s, Py_ssize_t n, Py_ssize_t i)
{
    Py_ssize_t end = -1;
    for (;;) {
        Py_ssize_t q = i;
        while (q < n && (is_space(s[q]) || s[q] == ','))
            q++;
        if (q >= n || s[q] != '(')
            return end;
        q++;
        while (q < n && (is_space(s[q]) || s[q] == '?' || s[q] == ','))
            q++;
        if (q >= n || s[q] != ')')
            return end;
        i = end = q + 1;
    }
}

/* \b(in|values?)(?:[\s,]*\([\s?,]*\))+ -> \1(?+) */
static Py_ssize_t in_lists(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t o = 0, i = 0;
    while (i < n) {
        if ((s[i] == 'i' || s[i] == 'v') && (i == 0 || !is_word(s[i - 1]))) {
            Py_ssize_t word = at(s, n, i, "in") ? 2 : at(s, n, i, "value") ? 5 : 0;
            if (word == 5 && i + 5 < n && s[i + 5] == 's')
                word = 6; /* `values` or nothing: `value` would need the list at the s */
            Py_ssize_t end = word ? lists(s, n, i + word) : -1;
            if (end >= 0) {
                for (Py_ssize_t k = 0; k < word; k++)
                    out[o++] = s[i + k];
                out[o++] = '(';
                out[o++] = '?';
                out[o++] = '+';
                out[o++] = ')';
                i = end;
                continue;
            }
        }
        out[o++] = s[i++];
    }
    return o;
}

/* \blimit \?(?:, ?\?| offset \?)? -> limit ?, the first one only. */
static Py_ssize_t limit(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++)
        if (s[i] == 'l' && at(s, n, i, "limit ?") && boundary(s, n, i))
            break;
    if (i == n) {
        memcpy(out, s, n * sizeof(ch_t));
        return n;
    }
    Py_ssize_t end = i + 7;
    if (at(s, n, end, ", ?"))
        end += 3;
    else if (at(s, n, end, ",?"))
        end += 2;
    else if (at(s, n, end, " offset ?"))
        end += 9;
    memcpy(out, s, (i + 7) * sizeof(ch_t));
    Py_ssize_t o = i + 7;
    for (Py_ssize_t k = end; k < n; k++)
        out[o++] = s[k];
    return o;
}

/* After the first \border by (i): pt's `1 while s/\G(.+?)\s+ASC/$1/gi`, each ASC needing one
 * character before it. */
static Py_ssize_t order_by_asc(const ch_t *s, Py_ssize_t n, ch_t *out)
{
    Py_ssize_t a;
    for (a = 0; a < n; a++)
        if (fold_eq(s[a], 'o') && at_ci(s, n, a, "order by ") && boundary(s, n, a))
            break;
    if (a == n) {
        memcpy(out, s, n * sizeof(ch_t));
        return n;
    }
    a += 9;
    memcpy(out, s, a * sizeof(ch_t));
    Py_ssize_t o = a, position = a;
    for (;;) {
        /* the leftmost \s+asc starting after `position` */
        Py_ssize_t start = position + 1, found = -1, stop = 0;
        while (start < n) {
            if (!is_space(s[start])) {
                start++;
                continue;
            }
            Py_ssize_t e = skip_space(s, n, start);
            if (at_ci(s, n, e, "asc")) {
                found = start;
                stop = e + 3;
                break;
            }
            start = e;
        }
        if (found < 0)
            break;
        for (Py_ssize_t k = position; k < found; k++)
            out[o++] = s[k];
        position = stop;
    }
    for (Py_ssize_t k = position; k < n; k++)
        out[o++] = s[k];
    return o;
}

#define PASS(t, call) text_swap(&(t), call)

enum { HAS_SLASH = 1, HAS_LINE_COMMENT = 2, HAS_BACKSLASH = 4, HAS_DOUBLE = 8, HAS_SINGLE = 16 };

/* Which of the rules that need a particular character can apply: a rule whose character is
 * absent is skipped (no rule adds one of these characters). */
static int present(const ch_t *s, Py_ssize_t n)
{
    int found = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '/': found |= HAS_SLASH; break;
        case '#': case '-': found |= HAS_LINE_COMMENT; break;
        case '\\': found |= HAS_BACKSLASH; break;
        case '"': found |= HAS_DOUBLE; break;
        case '\'': found |= HAS_SINGLE; break;
        }
    }
    return found;
}

/* pt's rules from the multi-row cut to the IN lists. Returns 1 for `use ?`, -1 on error. */
static int run_core(Text *t, PyObject *query, int insert)
{
    if (text_load(t, query) < 0)
        return -1;
    if (insert)
        t->n = multi_insert(t->s, t->n);
    int has = present(t->s, t->n);
    if (has & HAS_SLASH)
        PASS(*t, block_comments(t->s, t->n, t->out));
    if (has & HAS_LINE_COMMENT)
        PASS(*t, line_comments(t->s, t->n, t->out));
    if (is_use(t->s, t->n))
        return 1;
    if (has & HAS_BACKSLASH)
        PASS(*t, escaped_quotes(t->s, t->n, t->out));
    if (has & HAS_DOUBLE)
        PASS(*t, quoted(t->s, t->n, t->out, '"'));
    if (has & HAS_SINGLE)
        PASS(*t, quoted(t->s, t->n, t->out, '\''));
    PASS(*t, booleans(t->s, t->n, t->out));
    PASS(*t, numbers(t->s, t->n, t->out));
    PASS(*t, number_tails(t->s, t->n, t->out));
    PASS(*t, whitespace(t->s, t->n, t->out));
    if (lower(t) < 0)
        return -1;
    PASS(*t, nulls(t->s, t->n, t->out));
    PASS(*t, in_lists(t->s, t->n, t->out));
    return 0;
}

static void run_tail(Text *t)
{
    PASS(*t, limit(t->s, t->n, t->out));
    PASS(*t, order_by_asc(t->s, t->n, t->out));
}

static int has_union(const Text *t)
{
    for (Py_ssize_t i = 0; i + 5 <= t->n; i++)
        if (t->s[i] == 'u' && at(t->s, t->n, i, "union"))
            return 1;
    return 0;
}

static PyObject *finish(Text *t, int rc)
{
    PyObject *result = rc < 0 ? NULL : rc == 1 ? PyUnicode_FromString("use ?") : text_str(t);
    text_free(t);
    if (result == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    return result;
}

static PyObject *fingerprint(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *query;
    int insert;
    if (!PyArg_ParseTuple(args, "Up", &query, &insert))
        return NULL;
    Text t = {0};
    int rc = run_core(&t, query, insert);
    if (rc == 0) {
        if (has_union(&t)) {
            text_free(&t);
            Py_RETURN_NONE;
        }
        run_tail(&t);
    }
    return finish(&t, rc);
}

static PyObject *core(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *query;
    int insert;
    if (!PyArg_ParseTuple(args, "Up", &query, &insert))
        return NULL;
    Text t = {0};
    return finish(&t, run_core(&t, query, insert));
}

static PyObject *tail(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text))
        return NULL;
    Text t = {0};
    int rc = text_load(&t, text);
    if (rc == 0)
        run_tail(&t);
    return finish(&t, rc);
}

static PyMethodDef methods[] = {
    {"fingerprint", fingerprint, METH_VARARGS,
     "fingerprint(query, insert) -> pt's fingerprint, or None when the statement holds `union` "
     "(then: tail(repeated-UNION rule(core(query, insert)))). `insert`: the statement starts "
     "with INSERT or REPLACE as str.upper() reads it, so the multi-row cut applies."},
    {"core", core, METH_VARARGS, "core(query, insert) -> pt's rules up to the IN lists."},
    {"tail", tail, METH_VARARGS, "tail(text) -> pt's LIMIT and ORDER BY ... ASC rules."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fingerprint", "pt-query-digest's fingerprint rules in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fingerprint(void) { return PyModule_Create(&module); }
