/*
 * Window attributes (MPI-5.0 section 7.7.3): the predefined MPI_WIN_BASE,
 * _SIZE, _DISP_UNIT, _CREATE_FLAVOR and _MODEL, and the program's keys.
 * Window keys are numbered from WIN_KEYVAL_BASE, apart from the
 * communicators' and from the predefined keys; windows are never
 * duplicated, so a key's copy function is never called.
 */
#include <stdlib.h>

#include "mpi/win.h"

#define WIN_KEYVAL_BASE 0x7000

typedef struct {
    MPI_Win_delete_attr_function *del;
    void *extra_state;
    int live;
} win_keyval_t;

struct pb_win_attr {
    int keyval;
    void *value;
    struct pb_win_attr *next;
};

static struct {
    win_keyval_t *keys;
    int count, cap;
} keyvals;

static win_keyval_t *keyval_of(int keyval)
{
    int i = keyval - WIN_KEYVAL_BASE;

    if (i < 0 || i >= keyvals.count || !keyvals.keys[i].live)
        return NULL;
    return &keyvals.keys[i];
}

int pb_mpi_win_create_keyval_impl(const char *func, MPI_Win_copy_attr_function *win_copy_attr_fn,
                                  MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
                                  void *extra_state)
{
    if (keyvals.count == keyvals.cap) {
        int cap = keyvals.cap > 0 ? 2 * keyvals.cap : 16;
        win_keyval_t *more = realloc(keyvals.keys, (size_t)cap * sizeof(*more));

        if (more == NULL)
            return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, func, "out of memory for the key");
        keyvals.keys = more;
        keyvals.cap = cap;
    }
    keyvals.keys[keyvals.count] =
        (win_keyval_t){.del = win_delete_attr_fn, .extra_state = extra_state, .live = 1};
    *win_keyval = WIN_KEYVAL_BASE + keyvals.count++;
    return MPI_SUCCESS;
}

int pb_mpi_win_free_keyval_impl(const char *func, int *win_keyval)
{
    win_keyval_t *k = keyval_of(*win_keyval);

    if (k == NULL)
        return pb_mpi_raise(MPI_COMM_NULL, MPI_ERR_KEYVAL, func,
                            "%d is not a key of MPI_Win_create_keyval", *win_keyval);
    /* windows that still hold the key keep using its delete function */
    k->live = 0;
    *win_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

static struct pb_win_attr **attr_find(pb_win_t *w, int keyval)
{
    struct pb_win_attr **p = &w->attrs;

    while (*p != NULL && (*p)->keyval != keyval)
        p = &(*p)->next;
    return p;
}

/* Delete the attribute at *@p through its key's delete function. */
static int attr_remove(pb_win_t *w, struct pb_win_attr **p)
{
    struct pb_win_attr *a = *p;
    int i = a->keyval - WIN_KEYVAL_BASE;
    win_keyval_t *k = &keyvals.keys[i];

    if (k->del != NULL && k->del != MPI_WIN_NULL_DELETE_FN) {
        int rc = k->del(w->handle, a->keyval, a->value, k->extra_state);

        if (rc != MPI_SUCCESS)
            return rc;
    }
    *p = a->next;
    free(a);
    return MPI_SUCCESS;
}

static int predefined(int keyval)
{
    return keyval == MPI_WIN_BASE || keyval == MPI_WIN_SIZE || keyval == MPI_WIN_DISP_UNIT ||
           keyval == MPI_WIN_CREATE_FLAVOR || keyval == MPI_WIN_MODEL;
}

int pb_mpi_win_set_attr_impl(const char *func, MPI_Win win, int win_keyval, void *attribute_val,
                             pb_win_t *w)
{
    struct pb_win_attr **p;
    int rc;

    if (keyval_of(win_keyval) == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_KEYVAL, func, "%d is %s", win_keyval,
                                predefined(win_keyval) ? "a predefined key (read only)"
                                                       : "not a key of MPI_Win_create_keyval");
    p = attr_find(w, win_keyval);
    if (*p != NULL) {
        /* the old value's delete function runs, the entry keeps its place */
        int i = win_keyval - WIN_KEYVAL_BASE;
        win_keyval_t *k = &keyvals.keys[i];

        if (k->del != NULL && k->del != MPI_WIN_NULL_DELETE_FN) {
            rc = k->del(w->handle, win_keyval, (*p)->value, k->extra_state);
            if (rc != MPI_SUCCESS)
                return pb_mpi_win_raise(w, rc, func, "the key's delete function failed");
        }
        (*p)->value = attribute_val;
        return MPI_SUCCESS;
    }
    *p = calloc(1, sizeof(**p));
    if (*p == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_NO_MEM, func, "out of memory for the attribute");
    (*p)->keyval = win_keyval;
    (*p)->value = attribute_val;
    return MPI_SUCCESS;
}

int pb_mpi_win_get_attr_impl(const char *func, MPI_Win win, int win_keyval, void *attribute_val,
                             int *flag, pb_win_t *w)
{
    struct pb_win_attr **p;

    if (attribute_val == NULL || flag == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_ARG, func, "%s is NULL",
                                flag == NULL ? "flag" : "attribute_val");
    *flag = 1;
    w->attr_size = (MPI_Aint)w->bytes;
    w->attr_disp_unit = (int)w->disp_unit;
    w->attr_flavor = w->flavor;
    w->attr_model = w->model;
    switch (win_keyval) {
    case MPI_WIN_BASE: *(void **)attribute_val = w->base; return MPI_SUCCESS;
    case MPI_WIN_SIZE: *(void **)attribute_val = &w->attr_size; return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT: *(void **)attribute_val = &w->attr_disp_unit; return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR: *(void **)attribute_val = &w->attr_flavor; return MPI_SUCCESS;
    case MPI_WIN_MODEL: *(void **)attribute_val = &w->attr_model; return MPI_SUCCESS;
    default: break;
    }
    if (win_keyval < WIN_KEYVAL_BASE || win_keyval >= WIN_KEYVAL_BASE + keyvals.count) {
        *flag = 0;
        return pb_mpi_win_raise(w, MPI_ERR_KEYVAL, func, "%d is not a window key", win_keyval);
    }
    p = attr_find(w, win_keyval);
    *flag = *p != NULL;
    if (*p != NULL)
        *(void **)attribute_val = (*p)->value;
    return MPI_SUCCESS;
}

int pb_mpi_win_delete_attr_impl(const char *func, MPI_Win win, int win_keyval, pb_win_t *w)
{
    struct pb_win_attr **p;
    int rc;

    if (win_keyval < WIN_KEYVAL_BASE || win_keyval >= WIN_KEYVAL_BASE + keyvals.count)
        return pb_mpi_win_raise(w, MPI_ERR_KEYVAL, func, "%d is not a key of MPI_Win_create_keyval",
                                win_keyval);
    p = attr_find(w, win_keyval);
    if (*p == NULL)
        return pb_mpi_win_raise(w, MPI_ERR_KEYVAL, func, "the window has no attribute %d",
                                win_keyval);
    rc = attr_remove(w, p);
    return rc == MPI_SUCCESS ? rc : pb_mpi_win_raise(w, rc, func, "the delete function failed");
}

int pb_mpi_win_attr_delete_all(pb_win_t *win)
{
    while (win->attrs != NULL) {
        int rc = attr_remove(win, &win->attrs);

        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}
