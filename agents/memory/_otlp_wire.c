/* The native decoder of OTLP/HTTP protobuf trace bodies (ExportTraceServiceRequest).
 *
 *     decode_traces(data: bytes, span_type: type) -> list[span_type] | None
 *
 * It walks the protobuf wire format directly and builds the spans that otlp._batch_from_traces builds from the
 * protobuf library's messages: the same values, in the same order (see otlp.py). It returns None - and the caller
 * falls back to the protobuf library - wherever it cannot be sure to read the body exactly as the library does:
 * any malformed framing, invalid UTF-8 in any string field (skipped ones too: the library validates them all),
 * groups, a singular message field sent twice (the library would merge the two), two members of an AnyValue,
 * nesting deeper than MAX_DEPTH (the library stops at 100). It raises only TypeError (wrong arguments) and
 * MemoryError.
 *
 * Schema: opentelemetry-proto 1.45.2 (collector/trace/v1, trace/v1, common/v1, resource/v1). A known field number
 * arriving with another wire type is an unknown field to the library: skipped here too (framing checked only).
 * None of the fields read here is a repeated scalar, so packed encodings do not arise.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Depth of a message below the request (the request is 0). The protobuf library fails at 100. */
#define MAX_DEPTH 64
/* Attribute keys seen in one call, by their bytes: most keys repeat in every span. A power of two. */
#define KEY_SLOTS 256
#define KEY_MAX 64
/* Short string values (attribute values, span and scope names) seen in one call: many repeat across spans. */
#define VALUE_SLOTS 256
#define VALUE_MAX 64
/* Span ids (a span's own, its parent's: the same span's id as its children's parent) and trace ids seen in one call. */
#define ID_SLOTS 64
#define ID_MAX 16
/* Whole KeyValue messages seen in one call, by their bytes, with the key and the value read from them (a str, int,
 * float, bool or None: never a list or dict, which the caller may change): the same attribute often repeats. */
#define PAIR_SLOTS 256
#define PAIR_MAX 160
/* A span's attributes whose places are kept by the first walk over its fields (more: a second walk finds them). */
#define ATTR_BATCH 32

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };
#define TAG(field, wt) (((uint32_t)(field) << 3) | (uint32_t)(wt))

/* Every parsing function returns 0, or -1 when it failed: with an exception set (MemoryError) or, without one,
 * when it declines the body. */

typedef struct {
    const uint8_t *ptr;
    Py_ssize_t len;
    PyObject *str;
} KeySlot;

typedef struct {
    const uint8_t *ptr;
    Py_ssize_t len;
    PyObject *key;
    PyObject *value;
} PairSlot;

typedef struct {
    PyTypeObject *span_type;
    PyObject *spans;
    PyObject *empty;            /* "" */
    const uint8_t *trace_ptr;   /* the previous span's trace id bytes and its str (a new reference), or NULL */
    Py_ssize_t trace_len;
    PyObject *trace_str;
    KeySlot keys[KEY_SLOTS];
    KeySlot values[VALUE_SLOTS];
    KeySlot ids[ID_SLOTS];
    KeySlot *filled[KEY_SLOTS + VALUE_SLOTS + ID_SLOTS];  /* the slots with a str, to empty at the end of the call */
    Py_ssize_t n_filled;
    PairSlot pairs[PAIR_SLOTS];
    PairSlot *pairs_filled[PAIR_SLOTS];
    Py_ssize_t n_pairs_filled;
} Ctx;

/* The Ctx of a call, reused by the next (its slots empty between calls): clearing the whole of a fresh one costs
 * more than a small body's decoding. A call made while it is in use (a finalizer run by the garbage collector during
 * an allocation, another thread meanwhile) allocates its own. */
static Ctx shared_ctx;
static int shared_ctx_busy;

/* ---- wire format ---------------------------------------------------------------------------------------------- */

static inline int
read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t value = 0;
    int i;
    if (p < end && *p < 0x80) {
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    for (i = 0; i < 10; i++) {  /* the library's limit: 10 bytes; bits beyond 64 are dropped, as it does */
        uint8_t byte;
        if (p >= end) {
            return -1;
        }
        byte = *p++;
        value |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = value;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* A tag: at most 5 bytes and 32 bits, field number not 0 (the library rejects the rest). */
static inline int
read_tag(const uint8_t **pp, const uint8_t *end, uint32_t *out)
{
    const uint8_t *p = *pp;
    uint64_t value = 0;
    int i;
    if (p < end && *p < 0x80) {
        if (*p < 8) {
            return -1;
        }
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    for (i = 0; i < 5; i++) {
        uint8_t byte;
        if (p >= end) {
            return -1;
        }
        byte = *p++;
        value |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            if (value > 0xffffffffu || (value >> 3) == 0) {
                return -1;
            }
            *out = (uint32_t)value;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* A length-delimited field's payload: [*pp, *sub_end). */
static inline int
read_len(const uint8_t **pp, const uint8_t *end, const uint8_t **sub_end)
{
    uint64_t len;
    if (read_varint(pp, end, &len) < 0 || len > (uint64_t)(end - *pp) || len > INT32_MAX) {
        return -1;
    }
    *sub_end = *pp + len;
    return 0;
}

/* Skips one field whose tag was read, checking its framing only. Groups (3, 4) and wire types 6, 7: declined. */
static int
skip_field(const uint8_t **pp, const uint8_t *end, uint32_t tag)
{
    uint64_t ignored;
    const uint8_t *sub_end;
    switch (tag & 7) {
    case WT_VARINT:
        return read_varint(pp, end, &ignored);
    case WT_I64:
        if (end - *pp < 8) {
            return -1;
        }
        *pp += 8;
        return 0;
    case WT_LEN:
        if (read_len(pp, end, &sub_end) < 0) {
            return -1;
        }
        *pp = sub_end;
        return 0;
    case WT_I32:
        if (end - *pp < 4) {
            return -1;
        }
        *pp += 4;
        return 0;
    default:
        return -1;
    }
}

static inline uint64_t
load64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24
        | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

/* ---- strings ---------------------------------------------------------------------------------------------------- */

static inline int
is_ascii(const uint8_t *s, Py_ssize_t n)
{
    const uint8_t *end = s + n;
    uint64_t acc = 0, w0, w1, w2, w3;
    while (end - s >= 32) {  /* four words a step: no chain of dependent ORs */
        memcpy(&w0, s, 8);
        memcpy(&w1, s + 8, 8);
        memcpy(&w2, s + 16, 8);
        memcpy(&w3, s + 24, 8);
        acc |= (w0 | w1) | (w2 | w3);
        s += 32;
    }
    while (end - s >= 8) {
        memcpy(&w0, s, 8);
        acc |= w0;
        s += 8;
    }
    if (s < end && n >= 8) {  /* the last 8 bytes, overlapping the ones checked */
        memcpy(&w0, end - 8, 8);
        acc |= w0;
    } else {
        while (s < end) {
            acc |= *s++;
        }
    }
    return (acc & 0x8080808080808080ull) == 0;
}

/* Strict UTF-8 as the protobuf library (and Python) checks it: no overlong forms, no surrogates, at most U+10FFFF. */
static int
utf8_valid(const uint8_t *s, Py_ssize_t n)
{
    const uint8_t *end = s + n;
    while (s < end) {
        uint8_t c, c1;
        while (end - s >= 8) {
            uint64_t word;
            memcpy(&word, s, 8);
            if (word & 0x8080808080808080ull) {
                break;
            }
            s += 8;
        }
        if (s >= end) {
            break;
        }
        c = *s;
        if (c < 0x80) {
            s++;
            continue;
        }
        if (c < 0xc2) {
            return 0;
        }
        if (c < 0xe0) {
            if (end - s < 2 || (s[1] & 0xc0) != 0x80) {
                return 0;
            }
            s += 2;
            continue;
        }
        if (c < 0xf0) {
            if (end - s < 3) {
                return 0;
            }
            c1 = s[1];
            if (c == 0xe0 ? (c1 < 0xa0 || c1 > 0xbf) : c == 0xed ? (c1 < 0x80 || c1 > 0x9f) : (c1 & 0xc0) != 0x80) {
                return 0;
            }
            if ((s[2] & 0xc0) != 0x80) {
                return 0;
            }
            s += 3;
            continue;
        }
        if (c < 0xf5) {
            if (end - s < 4) {
                return 0;
            }
            c1 = s[1];
            if (c == 0xf0 ? (c1 < 0x90 || c1 > 0xbf) : c == 0xf4 ? (c1 < 0x80 || c1 > 0x8f) : (c1 & 0xc0) != 0x80) {
                return 0;
            }
            if ((s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80) {
                return 0;
            }
            s += 4;
            continue;
        }
        return 0;
    }
    return 1;
}

/* The characters of a str made by PyUnicode_New(n, 127): a compact ASCII str, whose characters follow its header
 * (what PyUnicode_DATA finds after its checks, which the compiler does not always inline). */
static inline Py_UCS1 *
ascii_data(PyObject *str)
{
    assert(PyUnicode_IS_COMPACT_ASCII(str));
    return (Py_UCS1 *)((PyASCIIObject *)str + 1);
}

/* A str from UTF-8 bytes (a new reference), or NULL: declined (invalid UTF-8, no exception) or MemoryError. */
static PyObject *
make_str(const uint8_t *s, Py_ssize_t n)
{
    PyObject *str;
    if (is_ascii(s, n)) {
        str = PyUnicode_New(n, 127);
        if (str != NULL && n) {
            memcpy(ascii_data(str), s, (size_t)n);
        }
        return str;
    }
    str = PyUnicode_DecodeUTF8((const char *)s, n, "strict");
    if (str == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
    }
    return str;
}

static const char HEX[] = "0123456789abcdef";

/* Lowercase hex of bytes, as bytes.hex(). */
static PyObject *
make_hex(const uint8_t *s, Py_ssize_t n)
{
    PyObject *str;
    Py_UCS1 *out;
    Py_ssize_t i;
    if (n > PY_SSIZE_T_MAX / 2) {
        return PyErr_NoMemory();
    }
    str = PyUnicode_New(2 * n, 127);
    if (str == NULL) {
        return NULL;
    }
    out = ascii_data(str);
    for (i = 0; i < n; i++) {
        out[2 * i] = (Py_UCS1)HEX[s[i] >> 4];
        out[2 * i + 1] = (Py_UCS1)HEX[s[i] & 15];
    }
    return str;
}

static inline int
all_zero(const uint8_t *s, Py_ssize_t n)
{
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        if (s[i]) {
            return 0;
        }
    }
    return 1;
}


/* A hash of short bytes for the caches (the bytes are compared in full on a hit): two lanes of 8 bytes a step, the
 * last 16 (or 8) bytes overlapping the previous ones when n is not a multiple. */
static inline uint32_t
hash_bytes(const uint8_t *s, Py_ssize_t n)
{
    uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)n, b = 0xc2b2ae3d27d4eb4full, w0, w1;
    const uint8_t *end = s + n;
    if (n >= 16) {
        while (end - s > 16) {
            memcpy(&w0, s, 8);
            memcpy(&w1, s + 8, 8);
            a = (a ^ w0) * 0xff51afd7ed558ccdull;
            b = (b ^ w1) * 0xc4ceb9fe1a85ec53ull;
            s += 16;
        }
        memcpy(&w0, end - 16, 8);
        memcpy(&w1, end - 8, 8);
    } else if (n >= 8) {
        memcpy(&w0, s, 8);
        memcpy(&w1, end - 8, 8);
    } else {
        w0 = 0;
        while (s < end) {
            w0 = w0 << 8 | *s++;
        }
        w1 = 0;
    }
    a = (a ^ w0) * 0xff51afd7ed558ccdull;
    b = (b ^ w1) * 0xc4ceb9fe1a85ec53ull;
    a ^= (b >> 32 | b << 32);
    a ^= a >> 29;
    a *= 0x94d049bb133111ebull;
    return (uint32_t)(a >> 32);
}

/* Whether n bytes at a and b are the same: memcmp inlined for the short strings of the caches. */
static inline int
same_bytes(const uint8_t *a, const uint8_t *b, Py_ssize_t n)
{
    uint64_t x, y;
    Py_ssize_t i;
    if (n < 8) {
        for (i = 0; i < n; i++) {
            if (a[i] != b[i]) {
                return 0;
            }
        }
        return 1;
    }
    for (i = 0; i < n - 8; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) {
            return 0;
        }
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* A str from the table when the same bytes were seen before in this call, else made and kept there. */
static inline PyObject *
cached_str(Ctx *ctx, KeySlot *table, uint32_t mask, const uint8_t *s, Py_ssize_t n,
           PyObject *(*make)(const uint8_t *, Py_ssize_t))
{
    KeySlot *slot;
    PyObject *str;
    slot = &table[hash_bytes(s, n) & mask];
    if (slot->str != NULL && slot->len == n && same_bytes(slot->ptr, s, n)) {
        Py_INCREF(slot->str);
        return slot->str;
    }
    str = make(s, n);
    if (str == NULL) {
        return NULL;
    }
    if (slot->str == NULL) {
        ctx->filled[ctx->n_filled++] = slot;
    } else {
        Py_DECREF(slot->str);
    }
    Py_INCREF(str);
    slot->ptr = s;
    slot->len = n;
    slot->str = str;
    return str;
}

static PyObject *
key_str(Ctx *ctx, const uint8_t *s, Py_ssize_t n)
{
    if (n > KEY_MAX) {
        return make_str(s, n);
    }
    return cached_str(ctx, ctx->keys, KEY_SLOTS - 1, s, n, make_str);
}

/* A string value: from the call's cache when short and seen before. */
static PyObject *
value_str(Ctx *ctx, const uint8_t *s, Py_ssize_t n)
{
    if (n > VALUE_MAX || n == 0) {
        return n ? make_str(s, n) : (Py_INCREF(ctx->empty), ctx->empty);
    }
    return cached_str(ctx, ctx->values, VALUE_SLOTS - 1, s, n, make_str);
}

/* An id as otlp._hex reads it: hex when not empty and not all zero, else NULL (no exception) - or NULL and
 * MemoryError. From the call's cache when the same bytes were seen before. */
static inline PyObject *
make_id(Ctx *ctx, const uint8_t *s, Py_ssize_t n)
{
    if (s == NULL || n == 0 || all_zero(s, n)) {
        return NULL;
    }
    if (n > ID_MAX) {
        return make_hex(s, n);
    }
    return cached_str(ctx, ctx->ids, ID_SLOTS - 1, s, n, make_hex);
}

/* ---- validation of the parts that are skipped ------------------------------------------------------------------ */

/* Messages whose content does not reach the spans but must be valid for the protobuf library to accept the body. */
enum { M_KEY_VALUE, M_ANY_VALUE, M_ARRAY_VALUE, M_KEY_VALUE_LIST, M_EVENT, M_LINK, M_ENTITY_REF };
enum { F_OTHER, F_STRING, F_MESSAGE };

/* What a length-delimited field of `message` is: a string, a message (*sub), or other (bytes, unknown). */
static int
len_field_kind(int message, uint32_t field, int *sub)
{
    switch (message) {
    case M_KEY_VALUE:  /* key=1 string, value=2 AnyValue */
        if (field == 1) {
            return F_STRING;
        }
        if (field == 2) {
            *sub = M_ANY_VALUE;
            return F_MESSAGE;
        }
        return F_OTHER;
    case M_ANY_VALUE:  /* string_value=1, array_value=5, kvlist_value=6 (bytes_value=7: bytes) */
        if (field == 1) {
            return F_STRING;
        }
        if (field == 5) {
            *sub = M_ARRAY_VALUE;
            return F_MESSAGE;
        }
        if (field == 6) {
            *sub = M_KEY_VALUE_LIST;
            return F_MESSAGE;
        }
        return F_OTHER;
    case M_ARRAY_VALUE:  /* values=1 AnyValue */
        if (field == 1) {
            *sub = M_ANY_VALUE;
            return F_MESSAGE;
        }
        return F_OTHER;
    case M_KEY_VALUE_LIST:  /* values=1 KeyValue */
        if (field == 1) {
            *sub = M_KEY_VALUE;
            return F_MESSAGE;
        }
        return F_OTHER;
    case M_EVENT:  /* time_unix_nano=1 fixed64, name=2, attributes=3, dropped_attributes_count=4 */
        if (field == 2) {
            return F_STRING;
        }
        if (field == 3) {
            *sub = M_KEY_VALUE;
            return F_MESSAGE;
        }
        return F_OTHER;
    case M_LINK:  /* trace_id=1, span_id=2 bytes, trace_state=3, attributes=4, dropped=5, flags=6 fixed32 */
        if (field == 3) {
            return F_STRING;
        }
        if (field == 4) {
            *sub = M_KEY_VALUE;
            return F_MESSAGE;
        }
        return F_OTHER;
    case M_ENTITY_REF:  /* schema_url=1, type=2, id_keys=3, description_keys=4: all strings */
        return field >= 1 && field <= 4 ? F_STRING : F_OTHER;
    default:
        return F_OTHER;
    }
}

static int
validate(const uint8_t *p, const uint8_t *end, int message, int depth)
{
    if (depth > MAX_DEPTH) {
        return -1;
    }
    while (p < end) {
        uint32_t tag;
        const uint8_t *sub_end;
        int sub = 0;
        if (read_tag(&p, end, &tag) < 0) {
            return -1;
        }
        if ((tag & 7) != WT_LEN) {
            if (skip_field(&p, end, tag) < 0) {
                return -1;
            }
            continue;
        }
        if (read_len(&p, end, &sub_end) < 0) {
            return -1;
        }
        switch (len_field_kind(message, tag >> 3, &sub)) {
        case F_STRING:
            if (!utf8_valid(p, sub_end - p)) {
                return -1;
            }
            break;
        case F_MESSAGE:
            if (validate(p, sub_end, sub, depth + 1) < 0) {
                return -1;
            }
            break;
        default:
            break;
        }
        p = sub_end;
    }
    return 0;
}

/* ---- attributes --------------------------------------------------------------------------------------------------- */

static int parse_key_value(Ctx *ctx, const uint8_t *p, const uint8_t *end, int depth, PyObject *dict);

/* An AnyValue as otlp.any_value reads it (a new reference), or NULL (declined, or MemoryError). */
static PyObject *
parse_any_value(Ctx *ctx, const uint8_t *p, const uint8_t *end, int depth)
{
    uint32_t kind = 0;
    uint64_t scalar = 0;
    const uint8_t *sub = NULL, *sub_end = NULL;
    if (depth > MAX_DEPTH) {
        return NULL;
    }
    while (p < end) {
        uint32_t tag;
        if (read_tag(&p, end, &tag) < 0) {
            return NULL;
        }
        switch (tag) {
        case TAG(1, WT_LEN):  /* string_value */
        case TAG(5, WT_LEN):  /* array_value */
        case TAG(6, WT_LEN):  /* kvlist_value */
        case TAG(7, WT_LEN):  /* bytes_value */
            if (kind || read_len(&p, end, &sub_end) < 0) {  /* a second member: the library would merge */
                return NULL;
            }
            kind = tag >> 3;
            sub = p;
            p = sub_end;
            break;
        case TAG(2, WT_VARINT):  /* bool_value */
        case TAG(3, WT_VARINT):  /* int_value */
        case TAG(8, WT_VARINT):  /* string_value_strindex (int32) */
            if (kind || read_varint(&p, end, &scalar) < 0) {
                return NULL;
            }
            kind = tag >> 3;
            break;
        case TAG(4, WT_I64):  /* double_value */
            if (kind || end - p < 8) {
                return NULL;
            }
            kind = 4;
            scalar = load64(p);
            p += 8;
            break;
        default:
            if (skip_field(&p, end, tag) < 0) {
                return NULL;
            }
        }
    }
    switch (kind) {
    case 0:
        Py_RETURN_NONE;
    case 1:
        return value_str(ctx, sub, sub_end - sub);
    case 2:
        return PyBool_FromLong(scalar != 0);
    case 3:
        return PyLong_FromLongLong((long long)(int64_t)scalar);
    case 4: {
        double value;
        memcpy(&value, &scalar, sizeof value);
        return PyFloat_FromDouble(value);
    }
    case 5: {
        PyObject *list = PyList_New(0);
        if (list == NULL) {
            return NULL;
        }
        p = sub;
        while (p < sub_end) {
            uint32_t tag;
            const uint8_t *item_end;
            if (read_tag(&p, sub_end, &tag) < 0) {
                goto list_fail;
            }
            if (tag == TAG(1, WT_LEN)) {
                PyObject *item;
                int appended;
                if (read_len(&p, sub_end, &item_end) < 0) {
                    goto list_fail;
                }
                item = parse_any_value(ctx, p, item_end, depth + 2);  /* ArrayValue, then AnyValue */
                if (item == NULL) {
                    goto list_fail;
                }
                appended = PyList_Append(list, item);
                Py_DECREF(item);
                if (appended < 0) {
                    goto list_fail;
                }
                p = item_end;
            } else if (skip_field(&p, sub_end, tag) < 0) {
                goto list_fail;
            }
        }
        return list;
    list_fail:
        Py_DECREF(list);
        return NULL;
    }
    case 6: {
        PyObject *dict = PyDict_New();
        if (dict == NULL) {
            return NULL;
        }
        p = sub;
        while (p < sub_end) {
            uint32_t tag;
            const uint8_t *item_end;
            if (read_tag(&p, sub_end, &tag) < 0) {
                goto dict_fail;
            }
            if (tag == TAG(1, WT_LEN)) {
                if (read_len(&p, sub_end, &item_end) < 0
                    || parse_key_value(ctx, p, item_end, depth + 2, dict) < 0) {  /* KeyValueList, KeyValue */
                    goto dict_fail;
                }
                p = item_end;
            } else if (skip_field(&p, sub_end, tag) < 0) {
                goto dict_fail;
            }
        }
        return dict;
    dict_fail:
        Py_DECREF(dict);
        return NULL;
    }
    case 7:
        return make_hex(sub, sub_end - sub);
    case 8:
        return PyLong_FromLong((long)(int32_t)(uint32_t)scalar);
    default:
        return NULL;
    }
}

/* One KeyValue into dict, as `out[kv.key] = any_value(kv.value)`. */
static int
parse_key_value(Ctx *ctx, const uint8_t *p, const uint8_t *end, int depth, PyObject *dict)
{
    const uint8_t *key = NULL, *key_end = NULL, *value = NULL, *value_end = NULL, *begin = p;
    PyObject *key_obj, *value_obj;
    PairSlot *pair = NULL;
    int status;
    if (depth > MAX_DEPTH) {
        return -1;
    }
    /* The pair cache: only where the value's depth is no limit (the same bytes deeper could be declined). */
    if (end - p <= PAIR_MAX && depth < MAX_DEPTH) {
        pair = &ctx->pairs[hash_bytes(p, end - p) & (PAIR_SLOTS - 1)];
        if (pair->key != NULL && pair->len == end - p && same_bytes(pair->ptr, p, end - p)) {
            return PyDict_SetItem(dict, pair->key, pair->value);
        }
    }
    while (p < end) {
        uint32_t tag;
        const uint8_t *sub_end;
        if (read_tag(&p, end, &tag) < 0) {
            return -1;
        }
        switch (tag) {
        case TAG(1, WT_LEN):  /* key: the last wins, every one must be valid */
            if (read_len(&p, end, &sub_end) < 0 || (key != NULL && !utf8_valid(key, key_end - key))) {
                return -1;
            }
            key = p;
            key_end = p = sub_end;
            break;
        case TAG(2, WT_LEN):  /* value */
            if (value != NULL || read_len(&p, end, &sub_end) < 0) {
                return -1;
            }
            value = p;
            value_end = p = sub_end;
            break;
        default:  /* key_strindex=3 int32 and unknown fields */
            if (skip_field(&p, end, tag) < 0) {
                return -1;
            }
        }
    }
    if (key != NULL) {
        key_obj = key_str(ctx, key, key_end - key);
        if (key_obj == NULL) {
            return -1;
        }
    } else {
        key_obj = ctx->empty;
        Py_INCREF(key_obj);
    }
    if (value != NULL) {
        value_obj = parse_any_value(ctx, value, value_end, depth + 1);
        if (value_obj == NULL) {
            Py_DECREF(key_obj);
            return -1;
        }
    } else {
        value_obj = Py_None;
        Py_INCREF(value_obj);
    }
    status = PyDict_SetItem(dict, key_obj, value_obj);
    if (status == 0 && pair != NULL && !PyList_CheckExact(value_obj) && !PyDict_CheckExact(value_obj)) {
        if (pair->key == NULL) {
            ctx->pairs_filled[ctx->n_pairs_filled++] = pair;
        } else {
            Py_DECREF(pair->key);
            Py_DECREF(pair->value);
        }
        pair->ptr = begin;
        pair->len = end - begin;
        pair->key = key_obj;  /* the references */
        pair->value = value_obj;
        return 0;
    }
    Py_DECREF(key_obj);
    Py_DECREF(value_obj);
    return status;
}

/* ---- spans -------------------------------------------------------------------------------------------------------- */

/* A dict for about n items: sized at once, not grown step by step as they come. */
static inline PyObject *
new_dict(Py_ssize_t n)
{
#if PY_VERSION_HEX < 0x030D0000
    return _PyDict_NewPresized(n);
#else
    (void)n;
    return PyDict_New();
#endif
}

static int
parse_span(Ctx *ctx, const uint8_t *begin, const uint8_t *end, int depth, PyObject *resource, PyObject *scope)
{
    const uint8_t *p = begin, *trace = NULL, *span = NULL, *parent = NULL, *name = NULL, *message = NULL, *sub_end;
    const uint8_t *attr_begin[ATTR_BATCH], *attr_end[ATTR_BATCH];
    Py_ssize_t trace_len = 0, span_len = 0, parent_len = 0, name_len = 0, message_len = 0, n_attrs = 0, i;
    uint64_t start = 0, finish = 0, code = 0;
    int status_seen = 0;
    PyObject *attributes = NULL, *tuple, *obj;
    if (depth > MAX_DEPTH) {
        return -1;
    }
    while (p < end) {
        uint32_t tag;
        if (read_tag(&p, end, &tag) < 0) {
            goto fail;
        }
        switch (tag) {
        case TAG(1, WT_LEN):  /* trace_id */
            if (read_len(&p, end, &sub_end) < 0) {
                goto fail;
            }
            trace = p;
            trace_len = sub_end - p;
            p = sub_end;
            break;
        case TAG(2, WT_LEN):  /* span_id */
            if (read_len(&p, end, &sub_end) < 0) {
                goto fail;
            }
            span = p;
            span_len = sub_end - p;
            p = sub_end;
            break;
        case TAG(3, WT_LEN):  /* trace_state */
            if (read_len(&p, end, &sub_end) < 0 || !utf8_valid(p, sub_end - p)) {
                goto fail;
            }
            p = sub_end;
            break;
        case TAG(4, WT_LEN):  /* parent_span_id */
            if (read_len(&p, end, &sub_end) < 0) {
                goto fail;
            }
            parent = p;
            parent_len = sub_end - p;
            p = sub_end;
            break;
        case TAG(5, WT_LEN):  /* name: the last wins, every one must be valid */
            if (read_len(&p, end, &sub_end) < 0 || (name != NULL && !utf8_valid(name, name_len))) {
                goto fail;
            }
            name = p;
            name_len = sub_end - p;
            p = sub_end;
            break;
        case TAG(7, WT_I64):  /* start_time_unix_nano */
            if (end - p < 8) {
                goto fail;
            }
            start = load64(p);
            p += 8;
            break;
        case TAG(8, WT_I64):  /* end_time_unix_nano */
            if (end - p < 8) {
                goto fail;
            }
            finish = load64(p);
            p += 8;
            break;
        case TAG(9, WT_LEN):  /* attributes: read once they are counted */
            if (read_len(&p, end, &sub_end) < 0) {
                goto fail;
            }
            if (n_attrs < ATTR_BATCH) {
                attr_begin[n_attrs] = p;
                attr_end[n_attrs] = sub_end;
            }
            n_attrs++;
            p = sub_end;
            break;
        case TAG(11, WT_LEN):  /* events */
            if (read_len(&p, end, &sub_end) < 0 || validate(p, sub_end, M_EVENT, depth + 1) < 0) {
                goto fail;
            }
            p = sub_end;
            break;
        case TAG(13, WT_LEN):  /* links */
            if (read_len(&p, end, &sub_end) < 0 || validate(p, sub_end, M_LINK, depth + 1) < 0) {
                goto fail;
            }
            p = sub_end;
            break;
        case TAG(15, WT_LEN): {  /* status: a second one would be merged */
            const uint8_t *q;
            if (status_seen || read_len(&p, end, &sub_end) < 0 || depth + 1 > MAX_DEPTH) {
                goto fail;
            }
            status_seen = 1;
            q = p;
            while (q < sub_end) {
                uint32_t status_tag;
                const uint8_t *string_end;
                if (read_tag(&q, sub_end, &status_tag) < 0) {
                    goto fail;
                }
                if (status_tag == TAG(2, WT_LEN)) {  /* message */
                    if (read_len(&q, sub_end, &string_end) < 0 || !utf8_valid(q, string_end - q)) {
                        goto fail;
                    }
                    message = q;
                    message_len = string_end - q;
                    q = string_end;
                } else if (status_tag == TAG(3, WT_VARINT)) {  /* code, an enum: int32 */
                    if (read_varint(&q, sub_end, &code) < 0) {
                        goto fail;
                    }
                } else if (skip_field(&q, sub_end, status_tag) < 0) {
                    goto fail;
                }
            }
            p = sub_end;
            break;
        }
        default:  /* kind=6, dropped counts 10, 12, 14, flags=16 fixed32 and unknown fields */
            if (skip_field(&p, end, tag) < 0) {
                goto fail;
            }
        }
    }
    attributes = n_attrs ? new_dict(n_attrs) : PyDict_New();
    if (attributes == NULL) {
        return -1;
    }
    if (n_attrs <= ATTR_BATCH) {
        for (i = 0; i < n_attrs; i++) {
            if (parse_key_value(ctx, attr_begin[i], attr_end[i], depth + 1, attributes) < 0) {
                goto fail;
            }
        }
    } else {
        p = begin;
        while (p < end) {  /* the framing was checked above */
            uint32_t tag;
            if (read_tag(&p, end, &tag) < 0) {
                goto fail;
            }
            if (tag == TAG(9, WT_LEN)) {
                if (read_len(&p, end, &sub_end) < 0 || parse_key_value(ctx, p, sub_end, depth + 1, attributes) < 0) {
                    goto fail;
                }
                p = sub_end;
            } else if (skip_field(&p, end, tag) < 0) {
                goto fail;
            }
        }
    }
    tuple = ctx->span_type->tp_alloc(ctx->span_type, 11);
    if (tuple == NULL) {
        goto fail;
    }
    /* trace_id: the previous span's str when the bytes are the same */
    if (trace != NULL && trace_len && ctx->trace_str != NULL && ctx->trace_len == trace_len
        && memcmp(ctx->trace_ptr, trace, (size_t)trace_len) == 0) {
        obj = ctx->trace_str;
        Py_INCREF(obj);
    } else {
        obj = make_id(ctx, trace, trace_len);
        if (obj == NULL) {
            if (PyErr_Occurred()) {
                goto fail_tuple;
            }
            obj = ctx->empty;
            Py_INCREF(obj);
        } else {
            Py_XDECREF(ctx->trace_str);
            Py_INCREF(obj);
            ctx->trace_str = obj;
            ctx->trace_ptr = trace;
            ctx->trace_len = trace_len;
        }
    }
    PyTuple_SET_ITEM(tuple, 0, obj);
    obj = make_id(ctx, span, span_len);
    if (obj == NULL) {
        if (PyErr_Occurred()) {
            goto fail_tuple;
        }
        obj = ctx->empty;
        Py_INCREF(obj);
    }
    PyTuple_SET_ITEM(tuple, 1, obj);
    obj = make_id(ctx, parent, parent_len);
    if (obj == NULL) {
        if (PyErr_Occurred()) {
            goto fail_tuple;
        }
        obj = Py_None;
        Py_INCREF(obj);
    }
    PyTuple_SET_ITEM(tuple, 2, obj);
    obj = name != NULL ? value_str(ctx, name, name_len) : (Py_INCREF(ctx->empty), ctx->empty);
    if (obj == NULL) {
        goto fail_tuple;
    }
    PyTuple_SET_ITEM(tuple, 3, obj);
    obj = PyLong_FromUnsignedLongLong(start);
    if (obj == NULL) {
        goto fail_tuple;
    }
    PyTuple_SET_ITEM(tuple, 4, obj);
    obj = PyLong_FromUnsignedLongLong(finish);
    if (obj == NULL) {
        goto fail_tuple;
    }
    PyTuple_SET_ITEM(tuple, 5, obj);
    PyTuple_SET_ITEM(tuple, 6, attributes);  /* the tuple owns it from here */
    attributes = NULL;
    Py_INCREF(resource);
    PyTuple_SET_ITEM(tuple, 7, resource);
    Py_INCREF(scope);
    PyTuple_SET_ITEM(tuple, 8, scope);
    obj = (int32_t)(uint32_t)code == 2 ? Py_True : Py_False;
    Py_INCREF(obj);
    PyTuple_SET_ITEM(tuple, 9, obj);
    obj = message != NULL ? value_str(ctx, message, message_len) : (Py_INCREF(ctx->empty), ctx->empty);
    if (obj == NULL) {
        goto fail_tuple;
    }
    PyTuple_SET_ITEM(tuple, 10, obj);
    if (PyList_Append(ctx->spans, tuple) < 0) {
        goto fail_tuple;
    }
    Py_DECREF(tuple);
    return 0;
fail_tuple:
    Py_DECREF(tuple);  /* with the items set so far (NULL items are skipped), attributes among them once set */
fail:
    Py_XDECREF(attributes);
    return -1;
}

/* The scope's name (a new reference) from an InstrumentationScope: name=1, version=2, attributes=3, dropped=4. */
static PyObject *
parse_scope(Ctx *ctx, const uint8_t *p, const uint8_t *end, int depth)
{
    const uint8_t *name = NULL, *name_end = NULL, *sub_end;
    if (depth > MAX_DEPTH) {
        return NULL;
    }
    while (p < end) {
        uint32_t tag;
        if (read_tag(&p, end, &tag) < 0) {
            return NULL;
        }
        switch (tag) {
        case TAG(1, WT_LEN):
            if (read_len(&p, end, &sub_end) < 0 || (name != NULL && !utf8_valid(name, name_end - name))) {
                return NULL;
            }
            name = p;
            name_end = p = sub_end;
            break;
        case TAG(2, WT_LEN):
            if (read_len(&p, end, &sub_end) < 0 || !utf8_valid(p, sub_end - p)) {
                return NULL;
            }
            p = sub_end;
            break;
        case TAG(3, WT_LEN):
            if (read_len(&p, end, &sub_end) < 0 || validate(p, sub_end, M_KEY_VALUE, depth + 1) < 0) {
                return NULL;
            }
            p = sub_end;
            break;
        default:
            if (skip_field(&p, end, tag) < 0) {
                return NULL;
            }
        }
    }
    if (name == NULL) {
        Py_INCREF(ctx->empty);
        return ctx->empty;
    }
    return value_str(ctx, name, name_end - name);
}

/* The first pass over a ResourceSpans or a ScopeSpans, which share their layout (1: one message, the resource or
 * the scope; 2: the repeated messages, read in a second pass; 3: the schema url): the framing checked, the schema
 * url's UTF-8 too, and where field 1 is (*one_begin NULL when absent). -1 when field 1 comes twice: protobuf would
 * merge the two. */
static int
first_pass(const uint8_t *p, const uint8_t *end, const uint8_t **one_begin, const uint8_t **one_end)
{
    const uint8_t *sub_end;
    *one_begin = *one_end = NULL;
    while (p < end) {
        uint32_t tag;
        if (read_tag(&p, end, &tag) < 0) {
            return -1;
        }
        switch (tag) {
        case TAG(1, WT_LEN):
            if (*one_begin != NULL || read_len(&p, end, &sub_end) < 0) {
                return -1;
            }
            *one_begin = p;
            *one_end = p = sub_end;
            break;
        case TAG(3, WT_LEN):
            if (read_len(&p, end, &sub_end) < 0 || !utf8_valid(p, sub_end - p)) {
                return -1;
            }
            p = sub_end;
            break;
        default:
            if (skip_field(&p, end, tag) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* ScopeSpans: scope=1, spans=2, schema_url=3. The scope may come after the spans: found first, then the spans. */
static int
parse_scope_spans(Ctx *ctx, const uint8_t *begin, const uint8_t *end, int depth, PyObject *resource)
{
    const uint8_t *p, *scope_begin, *scope_end, *sub_end;
    PyObject *scope;
    if (depth > MAX_DEPTH || first_pass(begin, end, &scope_begin, &scope_end) < 0) {
        return -1;
    }
    if (scope_begin != NULL) {
        scope = parse_scope(ctx, scope_begin, scope_end, depth + 1);
        if (scope == NULL) {
            return -1;
        }
    } else {
        scope = ctx->empty;
        Py_INCREF(scope);
    }
    p = begin;
    while (p < end) {  /* the framing was checked above */
        uint32_t tag;
        if (read_tag(&p, end, &tag) < 0) {
            goto fail;
        }
        if (tag == TAG(2, WT_LEN)) {
            if (read_len(&p, end, &sub_end) < 0 || parse_span(ctx, p, sub_end, depth + 1, resource, scope) < 0) {
                goto fail;
            }
            p = sub_end;
        } else if (skip_field(&p, end, tag) < 0) {
            goto fail;
        }
    }
    Py_DECREF(scope);
    return 0;
fail:
    Py_DECREF(scope);
    return -1;
}

/* Resource: attributes=1 into dict, dropped_attributes_count=2, entity_refs=3 (validated). */
static int
parse_resource(Ctx *ctx, const uint8_t *p, const uint8_t *end, int depth, PyObject *dict)
{
    if (depth > MAX_DEPTH) {
        return -1;
    }
    while (p < end) {
        uint32_t tag;
        const uint8_t *sub_end;
        if (read_tag(&p, end, &tag) < 0) {
            return -1;
        }
        switch (tag) {
        case TAG(1, WT_LEN):
            if (read_len(&p, end, &sub_end) < 0 || parse_key_value(ctx, p, sub_end, depth + 1, dict) < 0) {
                return -1;
            }
            p = sub_end;
            break;
        case TAG(3, WT_LEN):
            if (read_len(&p, end, &sub_end) < 0 || validate(p, sub_end, M_ENTITY_REF, depth + 1) < 0) {
                return -1;
            }
            p = sub_end;
            break;
        default:
            if (skip_field(&p, end, tag) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* ResourceSpans: resource=1, scope_spans=2, schema_url=3. One resource dict, shared by all its spans. */
static int
parse_resource_spans(Ctx *ctx, const uint8_t *begin, const uint8_t *end, int depth)
{
    const uint8_t *p, *resource_begin, *resource_end, *sub_end;
    PyObject *resource;
    if (depth > MAX_DEPTH || first_pass(begin, end, &resource_begin, &resource_end) < 0) {
        return -1;
    }
    resource = PyDict_New();
    if (resource == NULL) {
        return -1;
    }
    if (resource_begin != NULL && parse_resource(ctx, resource_begin, resource_end, depth + 1, resource) < 0) {
        goto fail;
    }
    p = begin;
    while (p < end) {
        uint32_t tag;
        if (read_tag(&p, end, &tag) < 0) {
            goto fail;
        }
        if (tag == TAG(2, WT_LEN)) {
            if (read_len(&p, end, &sub_end) < 0 || parse_scope_spans(ctx, p, sub_end, depth + 1, resource) < 0) {
                goto fail;
            }
            p = sub_end;
        } else if (skip_field(&p, end, tag) < 0) {
            goto fail;
        }
    }
    Py_DECREF(resource);
    return 0;
fail:
    Py_DECREF(resource);
    return -1;
}

/* ExportTraceServiceRequest: resource_spans=1. */
static int
parse_request(Ctx *ctx, const uint8_t *p, const uint8_t *end)
{
    while (p < end) {
        uint32_t tag;
        const uint8_t *sub_end;
        if (read_tag(&p, end, &tag) < 0) {
            return -1;
        }
        if (tag == TAG(1, WT_LEN)) {
            if (read_len(&p, end, &sub_end) < 0 || parse_resource_spans(ctx, p, sub_end, 1) < 0) {
                return -1;
            }
            p = sub_end;
        } else if (skip_field(&p, end, tag) < 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- module ------------------------------------------------------------------------------------------------------- */

PyDoc_STRVAR(decode_traces_doc,
"decode_traces(data, span_type, /)\n--\n\n"
"The spans of an OTLP ExportTraceServiceRequest body, each a span_type (a tuple subclass of 11 fields:\n"
"trace_id, span_id, parent_span_id, name, start_ns, end_ns, attributes, resource, scope, status_error,\n"
"status_message), in body order; or None when the body is not one this decoder reads exactly as the protobuf\n"
"library does (the caller then parses it with the library).");

static PyObject *
decode_traces(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Ctx *ctx;
    PyObject *result = NULL;
    Py_ssize_t i;
    int status;
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "decode_traces() takes exactly 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "decode_traces(): span_type must be a subclass of tuple");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (!shared_ctx_busy) {
        shared_ctx_busy = 1;
        ctx = &shared_ctx;
    } else {
        ctx = PyMem_Calloc(1, sizeof(Ctx));
        if (ctx == NULL) {
            PyBuffer_Release(&view);
            return PyErr_NoMemory();
        }
    }
    ctx->span_type = (PyTypeObject *)args[1];
    ctx->empty = PyUnicode_New(0, 0);
    ctx->spans = PyList_New(0);
    if (ctx->empty == NULL || ctx->spans == NULL) {
        status = -1;
    } else {
        status = parse_request(ctx, (const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len);
    }
    if (status == 0) {
        result = ctx->spans;
        ctx->spans = NULL;
    } else if (!PyErr_Occurred()) {
        result = Py_None;
        Py_INCREF(result);
    }
    Py_XDECREF(ctx->spans);
    Py_XDECREF(ctx->empty);
    Py_XDECREF(ctx->trace_str);
    for (i = 0; i < ctx->n_filled; i++) {
        Py_CLEAR(ctx->filled[i]->str);
    }
    for (i = 0; i < ctx->n_pairs_filled; i++) {
        Py_CLEAR(ctx->pairs_filled[i]->key);
        Py_CLEAR(ctx->pairs_filled[i]->value);
    }
    if (ctx == &shared_ctx) {
        ctx->spans = ctx->empty = ctx->trace_str = NULL;
        ctx->trace_ptr = NULL;
        ctx->trace_len = 0;
        ctx->n_filled = 0;
        ctx->n_pairs_filled = 0;
        shared_ctx_busy = 0;
    } else {
        PyMem_Free(ctx);
    }
    PyBuffer_Release(&view);
    return result;
}

/* ---- long numbers in JSON texts ----------------------------------------------------------------------------- */

PyDoc_STRVAR(has_long_number_doc,
"has_long_number(text: str) -> bool\n\n"
"Whether the text holds a run of 19 ASCII digits or more: a JSON integer orjson may read as a float (past 64\n"
"bits), which otlp.loads_attribute then reads with json.loads.");

static PyObject *
has_long_number(PyObject *module, PyObject *text)
{
    Py_ssize_t i, n, run = 0;
    int kind;
    const void *data;
    (void)module;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "has_long_number(): text must be a str");
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
        const uint8_t *p = (const uint8_t *)data;
        for (i = 0; i < n; i++) {
            if ((unsigned)(p[i] - '0') < 10u) {
                if (++run >= 19) {
                    Py_RETURN_TRUE;
                }
            } else {
                run = 0;
            }
        }
    } else {
        for (i = 0; i < n; i++) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            if (ch >= '0' && ch <= '9') {
                if (++run >= 19) {
                    Py_RETURN_TRUE;
                }
            } else {
                run = 0;
            }
        }
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"decode_traces", (PyCFunction)(void (*)(void))decode_traces, METH_FASTCALL, decode_traces_doc},
    {"has_long_number", has_long_number, METH_O, has_long_number_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "_otlp_wire",
    "The native decoder of OTLP/HTTP protobuf trace bodies (see agents/memory/otlp.py).",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__otlp_wire(void)
{
    return PyModule_Create(&module_def);
}
