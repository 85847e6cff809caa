/*
 * The one registry of the objects behind MPI handles, for every kind the
 * library creates (communicators, groups, datatypes, ops, infos, error
 * handlers, requests, windows, sessions): one validation scheme for all
 * of them, and the integers of MPI_<Object>_toint/_fromint.
 *
 * Design.  The objects of each kind live in a table of their own, grown in
 * chunks that are never freed or moved: chunk c holds 64 << c entries, so
 * a few chunks hold any realistic number of objects and an entry's index
 * gives its chunk by a bit scan.  An entry is a 16-byte header (kind tag
 * and state) followed by the object; entries are a power of two bytes
 * apart.  A handle is the address of its object.
 *
 * Validation (pb_eng_handle_valid) takes no lock and dereferences nothing
 * it has not proven to lie in a chunk of the kind: it finds the chunk the
 * address falls in (one comparison per chunk), checks that it is at an
 * object's offset within its entry, and reads the entry's state word.
 * Chunks are published by a release store of the chunk count after the
 * chunk pointer; the state word is written with release stores and read
 * with acquire loads.  So one thread may validate while another creates
 * or frees an object of any kind: it sees either the old state or the new
 * one, and never memory that is not an entry.  Creating and freeing take
 * the kind's mutex (they are not on the small-message path; requests reuse
 * their retired entries without it).
 *
 * Lifetimes.  An entry is free, live (its handle names it) or retired (its
 * handle no longer names it, but the object lives on for pending work: a
 * freed communicator with requests in flight, a released request kept for
 * reuse).  Only a live entry validates.
 *
 * Integers.  A created object's integer is PB_ENG_HANDLE_INT_BASE plus its
 * entry's index; the predefined handles, which the ABI fixes as constants
 * below 0x1000, convert to their own values (the callers handle those).
 */
#ifndef PB_ENG_HANDLE_H
#define PB_ENG_HANDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/mpi_impl.h"

/* The kinds of created objects, one table each. */
typedef enum {
    PB_ENG_HANDLE_COMM = 1,
    PB_ENG_HANDLE_GROUP,
    PB_ENG_HANDLE_DATATYPE,
    PB_ENG_HANDLE_OP,
    PB_ENG_HANDLE_INFO,
    PB_ENG_HANDLE_ERRHANDLER,
    PB_ENG_HANDLE_REQUEST,
    PB_ENG_HANDLE_WIN,
    PB_ENG_HANDLE_SESSION,
    PB_ENG_HANDLE_MESSAGE, /* a matched probe's message (MPI_Mprobe) */
    PB_ENG_HANDLE_KINDS    /* number of kinds + 1 */
} pb_eng_handle_kind_t;

/* Created objects convert to integers from this value up (MPI-5.0 §20.3.4
 * keeps 1-4095 for the predefined handles); a handle below it is a
 * predefined handle's ABI value, never an object of the registry. */
#define PB_ENG_HANDLE_INT_BASE 0x1000

/* A new live object of @kind, @size bytes, zeroed (every object of a kind
 * has the same size).  @return it, or NULL when out of memory. */
void *pb_eng_handle_new(pb_eng_handle_kind_t kind, size_t size);

/* 1 when @handle is the address of a live object of @kind; never
 * dereferences anything else, takes no lock. */
bool pb_eng_handle_valid(pb_eng_handle_kind_t kind, const void *handle);

/* The header of an entry, just before its object (handle.c owns the rest
 * of it; it is here for the two inline state changes below). */
typedef struct {
    _Atomic uint32_t state; /* PB_ENG_HANDLE_STATE(kind, ...) */
    uint32_t index;         /* the entry's index in its table */
    uint32_t next_free;     /* free list, under the table's lock */
    uint32_t pad;
} pb_eng_handle_entry_t;

/* The states of an entry: the kind tag above the lowest two bits. */
#define PB_ENG_HANDLE_FREE 0u
#define PB_ENG_HANDLE_RETIRED 1u
#define PB_ENG_HANDLE_LIVE 2u
#define PB_ENG_HANDLE_STATE(kind, s) ((uint32_t)(kind) << 2 | (s))

/* Make the live object @obj of @kind retired: its handle names nothing
 * from now on, the object stays allocated until pb_eng_handle_delete.
 * Inline and lock-free: a released request is retired so. */
static inline void pb_eng_handle_retire(pb_eng_handle_kind_t kind, void *obj)
{
    atomic_store_explicit(&((pb_eng_handle_entry_t *)obj - 1)->state,
                          PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_RETIRED), memory_order_release);
}

/* Make the retired object @obj of @kind live again (a reused request). */
static inline void pb_eng_handle_revive(pb_eng_handle_kind_t kind, void *obj)
{
    /* release: the reused object's new contents before its state */
    atomic_store_explicit(&((pb_eng_handle_entry_t *)obj - 1)->state,
                          PB_ENG_HANDLE_STATE(kind, PB_ENG_HANDLE_LIVE), memory_order_release);
}

/* Give the entry of @obj (live or retired) of @kind back to its table. */
void pb_eng_handle_delete(pb_eng_handle_kind_t kind, void *obj);

/* The integer of the live object @obj of @kind (PB_ENG_HANDLE_INT_BASE up);
 * -1 when @obj is no live object of @kind. */
int pb_eng_handle_toint(pb_eng_handle_kind_t kind, const void *obj);

/* The live object of @kind whose integer is @value, or NULL. */
void *pb_eng_handle_fromint(pb_eng_handle_kind_t kind, int value);

/* Some live object of @kind, or NULL when there is none (MPI_Finalize
 * frees what the program left). */
void *pb_eng_handle_any(pb_eng_handle_kind_t kind);

#endif
