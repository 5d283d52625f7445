/* Numbering the words of a batch of chunks, in C: the optional accelerator of word_numbers.py.
 *
 * Why C: a bulk write of 100,000 SciFact-length chunks spent half its time making a Python
 * string of every word and looking each up in a dict (22 million of them), and no library
 * made for the job splits by this index's rules and numbers in one pass (HF tokenizers,
 * pyarrow, polars and DuckDB's string functions were measured: bench/RESULTS.md). Here a
 * Python string is made only for each distinct word.
 *
 * add_ascii(text) splits ASCII text by tokenizer.py's ASCII rule (lower-cased; a word is a run
 * of [a-z0-9_], single joiners . - ' between word characters joining it into a compound; the
 * parts of the compounds follow all the words) and numbers the tokens; add_words(words)
 * numbers tokens made in Python. tests/test_word_numbers.py holds both equal to tokenize().
 */
#define PY_SSIZE_T_CLEAN
#define _GNU_SOURCE /* memmem */
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { SEPARATOR = 0, WORD = 1, JOINER = 2 };

static unsigned char CLASS[256];
static char LOWER[256];

static void init_tables(void) {
    for (int c = 0; c < 256; c++) {
        LOWER[c] = (char)((c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c);
        CLASS[c] = SEPARATOR;
    }
    for (int c = 'a'; c <= 'z'; c++) CLASS[c] = CLASS[c - 'a' + 'A'] = WORD;
    for (int c = '0'; c <= '9'; c++) CLASS[c] = WORD;
    CLASS['_'] = WORD;
    CLASS['.'] = CLASS['-'] = CLASS['\''] = JOINER;
}

typedef struct {
    uint64_t hash;
    Py_ssize_t start; /* in the arena */
    Py_ssize_t length;
    int32_t number; /* -1: an empty slot */
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;
    Py_ssize_t capacity; /* a power of two, at most half full */
    char *arena;         /* every distinct word's UTF-8 bytes */
    Py_ssize_t arena_used, arena_capacity;
    int32_t *numbers; /* each word added, as its number */
    Py_ssize_t count, numbers_capacity;
    char *lowered; /* the text being split, lower-cased */
    Py_ssize_t lowered_capacity;
    PyObject *words; /* the distinct words, in the order first seen: word n is words[n] */
} WordNumbers;

static int grow(void **buffer, Py_ssize_t *capacity, Py_ssize_t needed, size_t item) {
    if (needed <= *capacity) return 0;
    Py_ssize_t size = *capacity ? *capacity : 1024;
    while (size < needed) size *= 2;
    void *grown = PyMem_Realloc(*buffer, (size_t)size * item);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buffer = grown;
    *capacity = size;
    return 0;
}

static uint64_t hash_of(const char *bytes, Py_ssize_t length) { /* FNV-1a */
    uint64_t hash = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < length; i++) {
        hash ^= (unsigned char)bytes[i];
        hash *= 1099511628211ULL;
    }
    return hash;
}

static Slot *find(WordNumbers *self, const char *bytes, Py_ssize_t length, uint64_t hash) {
    Py_ssize_t mask = self->capacity - 1;
    for (Py_ssize_t i = (Py_ssize_t)(hash & (uint64_t)mask);; i = (i + 1) & mask) {
        Slot *slot = &self->slots[i];
        if (slot->number < 0) return slot;
        if (slot->hash == hash && slot->length == length &&
            memcmp(self->arena + slot->start, bytes, (size_t)length) == 0)
            return slot;
    }
}

static int rehash(WordNumbers *self) {
    Py_ssize_t capacity = self->capacity ? self->capacity * 2 : 1 << 16;
    Slot *old = self->slots, *slots = PyMem_Malloc((size_t)capacity * sizeof(Slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < capacity; i++) slots[i].number = -1;
    Py_ssize_t old_capacity = self->capacity;
    self->slots = slots;
    self->capacity = capacity;
    for (Py_ssize_t i = 0; i < old_capacity; i++) {
        if (old[i].number < 0) continue;
        Py_ssize_t mask = capacity - 1, j = (Py_ssize_t)(old[i].hash & (uint64_t)mask);
        while (slots[j].number >= 0) j = (j + 1) & mask;
        slots[j] = old[i];
    }
    PyMem_Free(old);
    return 0;
}

/* Append the number of the word ``bytes`` (``word``: its string, if the caller has one). */
static int add(WordNumbers *self, const char *bytes, Py_ssize_t length, PyObject *word) {
    uint64_t hash = hash_of(bytes, length);
    Slot *slot = find(self, bytes, length, hash);
    if (slot->number < 0) {
        Py_ssize_t distinct = PyList_GET_SIZE(self->words);
        if (2 * (distinct + 1) > self->capacity) {
            if (rehash(self) < 0) return -1;
            slot = find(self, bytes, length, hash);
        }
        if (grow((void **)&self->arena, &self->arena_capacity, self->arena_used + length, 1) < 0)
            return -1;
        PyObject *held = word ? Py_NewRef(word) : PyUnicode_FromStringAndSize(bytes, length);
        if (held == NULL) return -1;
        int failed = PyList_Append(self->words, held);
        Py_DECREF(held);
        if (failed) return -1;
        memcpy(self->arena + self->arena_used, bytes, (size_t)length);
        *slot = (Slot){hash, self->arena_used, length, (int32_t)distinct};
        self->arena_used += length;
    }
    if (grow((void **)&self->numbers, &self->numbers_capacity, self->count + 1, sizeof(int32_t)) < 0)
        return -1;
    self->numbers[self->count++] = slot->number;
    return 0;
}

/* The end of the word or compound starting at ``i``: word characters, and single joiners
 * between them. */
static Py_ssize_t token_end(const char *text, Py_ssize_t i, Py_ssize_t length, int *compound) {
    while (i < length && CLASS[(unsigned char)text[i]] == WORD) i++;
    while (i + 1 < length && CLASS[(unsigned char)text[i]] == JOINER &&
           CLASS[(unsigned char)text[i + 1]] == WORD) {
        *compound = 1;
        for (i++; i < length && CLASS[(unsigned char)text[i]] == WORD;) i++;
    }
    return i;
}

static int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* Write the UTF-8 of ``token`` with its escapes (zq, a non-ASCII code point in hex, zq: see
 * tokenizer.py's _ascii_escaped) read back into ``out``; its length, or -1 for an escape that
 * is not one. An escaped text has no other "zq", and an escape, all word characters, is never
 * split between tokens. */
static Py_ssize_t unescape(const char *token, Py_ssize_t length, char *out) {
    Py_ssize_t written = 0;
    for (Py_ssize_t i = 0; i < length;) {
        if (!(i + 1 < length && token[i] == 'z' && token[i + 1] == 'q')) {
            out[written++] = token[i++];
            continue;
        }
        Py_UCS4 code = 0;
        Py_ssize_t digits = i += 2;
        for (int digit; i < length && (digit = hex_digit(token[i])) >= 0 && code <= 0x10FFFF; i++)
            code = code * 16 + (Py_UCS4)digit;
        if (i == digits || i + 1 >= length || token[i] != 'z' || token[i + 1] != 'q' ||
            code < 0x80 || code > 0x10FFFF)
            return -1;
        i += 2;
        if (code < 0x800) {
            out[written++] = (char)(0xC0 | (code >> 6));
        } else if (code < 0x10000) {
            out[written++] = (char)(0xE0 | (code >> 12));
            out[written++] = (char)(0x80 | ((code >> 6) & 0x3F));
        } else {
            out[written++] = (char)(0xF0 | (code >> 18));
            out[written++] = (char)(0x80 | ((code >> 12) & 0x3F));
            out[written++] = (char)(0x80 | ((code >> 6) & 0x3F));
        }
        out[written++] = (char)(0x80 | (code & 0x3F));
    }
    return written;
}

/* Number a token of the text being split (read back first if the text is escaped). */
static int add_token(WordNumbers *self, const char *token, Py_ssize_t length, int escaped) {
    if (!escaped || memmem(token, (size_t)length, "zq", 2) == NULL)
        return add(self, token, length, NULL);
    /* An escape of 5+ characters stands for at most 4 bytes of UTF-8. */
    char *out = self->lowered + self->lowered_capacity - length;
    Py_ssize_t written = unescape(token, length, out);
    if (written < 0) {
        PyErr_Format(PyExc_ValueError, "add_ascii: %.*s is not escaped text", (int)length, token);
        return -1;
    }
    PyObject *word = PyUnicode_DecodeUTF8(out, written, "strict");
    if (word == NULL) return -1;
    Py_ssize_t size;
    const char *bytes = PyUnicode_AsUTF8AndSize(word, &size);
    int failed = bytes == NULL || add(self, bytes, size, word) < 0;
    Py_DECREF(word);
    return failed ? -1 : 0;
}

/* Number the parts of the compound ``text[start:end]`` (never empty: joiners sit between word
 * characters). */
static int add_parts(WordNumbers *self, const char *text, Py_ssize_t start, Py_ssize_t end,
                     int escaped, Py_ssize_t *count) {
    while (start < end) {
        Py_ssize_t stop = start;
        while (stop < end && CLASS[(unsigned char)text[stop]] != JOINER) stop++;
        if (add_token(self, text + start, stop - start, escaped) < 0) return -1;
        ++*count;
        start = stop + 1;
    }
    return 0;
}

static PyObject *add_ascii(WordNumbers *self, PyObject *args) {
    PyObject *text;
    int escaped = 0;
    if (!PyArg_ParseTuple(args, "U|p:add_ascii", &text, &escaped)) return NULL;
    if (!PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "add_ascii takes ASCII text");
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    const unsigned char *source = PyUnicode_1BYTE_DATA(text);
    /* The text lower-cased, then room for its longest token read back (see add_token). */
    if (grow((void **)&self->lowered, &self->lowered_capacity, 2 * length, 1) < 0) return NULL;
    char *lowered = self->lowered;
    for (Py_ssize_t i = 0; i < length; i++) lowered[i] = LOWER[source[i]];
    Py_ssize_t count = 0, compounds = 0, i = 0;
    while (i < length) {
        if (CLASS[(unsigned char)lowered[i]] != WORD) {
            i++;
            continue;
        }
        int compound = 0;
        Py_ssize_t end = token_end(lowered, i, length, &compound);
        if (add_token(self, lowered + i, end - i, escaped) < 0) return NULL;
        count++;
        if (compound) compounds++;
        i = end;
    }
    if (compounds) { /* their parts follow every word: a second pass finds them again */
        for (i = 0; i < length;) {
            if (CLASS[(unsigned char)lowered[i]] != WORD) {
                i++;
                continue;
            }
            int compound = 0;
            Py_ssize_t end = token_end(lowered, i, length, &compound);
            if (compound && add_parts(self, lowered, i, end, escaped, &count) < 0) return NULL;
            i = end;
        }
    }
    return PyLong_FromSsize_t(count);
}

static PyObject *add_words(WordNumbers *self, PyObject *words) {
    PyObject *sequence = PySequence_Fast(words, "add_words takes a list of strings");
    if (sequence == NULL) return NULL;
    Py_ssize_t size = PySequence_Fast_GET_SIZE(sequence);
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    for (Py_ssize_t i = 0; i < size; i++) {
        Py_ssize_t length;
        const char *bytes = PyUnicode_Check(items[i]) ? PyUnicode_AsUTF8AndSize(items[i], &length)
                                                      : NULL;
        if (bytes == NULL || add(self, bytes, length, items[i]) < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "add_words takes strings");
            Py_DECREF(sequence);
            return NULL;
        }
    }
    Py_DECREF(sequence);
    return PyLong_FromSsize_t(size);
}

static PyObject *numbers(WordNumbers *self, PyObject *Py_UNUSED(ignored)) {
    return PyBytes_FromStringAndSize((const char *)self->numbers,
                                     self->count * (Py_ssize_t)sizeof(int32_t));
}

static PyObject *words(WordNumbers *self, void *Py_UNUSED(closure)) {
    return Py_NewRef(self->words);
}

static PyObject *new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "WordNumbers takes no arguments");
        return NULL;
    }
    WordNumbers *self = (WordNumbers *)type->tp_alloc(type, 0); /* zeroed */
    if (self == NULL) return NULL;
    self->words = PyList_New(0);
    if (self->words == NULL || rehash(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void dealloc(WordNumbers *self) {
    PyMem_Free(self->slots);
    PyMem_Free(self->arena);
    PyMem_Free(self->numbers);
    PyMem_Free(self->lowered);
    Py_XDECREF(self->words);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef methods[] = {
    {"add_ascii", (PyCFunction)add_ascii, METH_VARARGS,
     "add_ascii(text, escaped=False): number the tokens of ASCII text (escaped: by"
     " tokenizer.ascii_form); how many there were."},
    {"add_words", (PyCFunction)add_words, METH_O, "Number tokens; how many there were."},
    {"numbers", (PyCFunction)numbers, METH_NOARGS,
     "Every token added, as its number: int32s in native byte order."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef getset[] = {
    {"words", (getter)words, NULL, "The distinct tokens, in the order first seen.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject WordNumbersType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "duckdb_vectors.index._word_numbers.WordNumbers",
    .tp_basicsize = sizeof(WordNumbers),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The tokens of a batch of texts as numbers, and the distinct tokens.",
    .tp_new = new,
    .tp_dealloc = (destructor)dealloc,
    .tp_methods = methods,
    .tp_getset = getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_word_numbers", "See word_numbers.py.", -1, NULL, NULL, NULL, NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__word_numbers(void) {
    init_tables();
    if (PyType_Ready(&WordNumbersType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "WordNumbers", (PyObject *)&WordNumbersType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
