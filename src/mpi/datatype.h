/*
 * Datatypes: the predefined ones of the standard ABI and the ones a
 * program builds (contiguous, vector, hvector, indexed, struct, resized),
 * and the pack/unpack engine the messaging layer moves them with.
 *
 * A predefined handle is one of the ABI's constants below 0x400
 * (MPI_INT = 0x209); pb_mpi_datatype maps it to a static object.  A
 * created handle points at a struct MPI_ABI_Datatype of this library.
 */
#ifndef PB_MPI_DATATYPE_H
#define PB_MPI_DATATYPE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/mpi_impl.h"

/* The basic C type of a predefined datatype's elements, for reductions
 * (op.c) and for MPI_Get_elements. */
typedef enum {
    PB_BASIC_NONE = 0, /* not one basic type (a struct of several, MPI_PACKED) */
    PB_BASIC_CHAR,
    PB_BASIC_SIGNED_CHAR,
    PB_BASIC_UNSIGNED_CHAR,
    PB_BASIC_BYTE,
    PB_BASIC_SHORT,
    PB_BASIC_UNSIGNED_SHORT,
    PB_BASIC_INT,
    PB_BASIC_UNSIGNED,
    PB_BASIC_LONG,
    PB_BASIC_UNSIGNED_LONG,
    PB_BASIC_LONG_LONG,
    PB_BASIC_UNSIGNED_LONG_LONG,
    PB_BASIC_INT8,
    PB_BASIC_UINT8,
    PB_BASIC_INT16,
    PB_BASIC_UINT16,
    PB_BASIC_INT32,
    PB_BASIC_UINT32,
    PB_BASIC_INT64,
    PB_BASIC_UINT64,
    PB_BASIC_AINT,
    PB_BASIC_OFFSET,
    PB_BASIC_COUNT,
    PB_BASIC_FLOAT,
    PB_BASIC_DOUBLE,
    PB_BASIC_LONG_DOUBLE,
    PB_BASIC_C_BOOL,
    PB_BASIC_WCHAR,
    PB_BASIC_C_FLOAT_COMPLEX,
    PB_BASIC_C_DOUBLE_COMPLEX,
    PB_BASIC_C_LONG_DOUBLE_COMPLEX,
    /* the pair types of MINLOC/MAXLOC */
    PB_BASIC_FLOAT_INT,
    PB_BASIC_DOUBLE_INT,
    PB_BASIC_LONG_INT,
    PB_BASIC_2INT,
    PB_BASIC_SHORT_INT,
    PB_BASIC_LONG_DOUBLE_INT,
    PB_BASIC_COUNT_OF /* number of kinds */
} pb_basic_t;

typedef struct MPI_ABI_Datatype pb_datatype_t;

/* The C layouts of the value-index pair types (MPI_FLOAT_INT, ...): the
 * value, then the int index, with the C compiler's padding. */
typedef struct {
    float v;
    int i;
} pb_float_int_t;
typedef struct {
    double v;
    int i;
} pb_double_int_t;
typedef struct {
    long v;
    int i;
} pb_long_int_t;
typedef struct {
    int v;
    int i;
} pb_2int_t;
typedef struct {
    short v;
    int i;
} pb_short_int_t;
typedef struct {
    long double v;
    int i;
} pb_long_double_int_t;

/* The datatype @handle stands for, or NULL when @handle is no datatype
 * (MPI_DATATYPE_NULL, a freed or made-up handle, a predefined value the
 * library does not support, such as the Fortran types). */
pb_datatype_t *pb_mpi_datatype(MPI_Datatype handle);

/* Check @handle for use in communication: MPI_SUCCESS, MPI_ERR_TYPE when
 * it is no datatype or (for a created one) not committed. */
int pb_mpi_datatype_check(MPI_Datatype handle);

/* Bytes of data in one element of @t (MPI_Type_size). */
size_t pb_mpi_type_size(const pb_datatype_t *t);

/* The extent of @t (MPI_Type_get_extent): the stride between elements. */
MPI_Aint pb_mpi_type_extent(const pb_datatype_t *t);

/* 1 when @count elements of @t are one block of @count * size bytes
 * starting at buf + pb_mpi_type_true_lb(t): then the engine copies them with
 * memcpy and never calls pack/unpack. */
int pb_mpi_type_is_contiguous(const pb_datatype_t *t);

/* The offset of the first byte of data of an element from its address. */
MPI_Aint pb_mpi_type_true_lb(const pb_datatype_t *t);

/* The basic type every element of @t is made of, or PB_BASIC_NONE. */
pb_basic_t pb_mpi_type_basic(const pb_datatype_t *t);

/* Copy packed bytes [@offset, @offset + @len) of the @count elements of @t
 * at @buf into @dst (pack) or from @src into them (unpack): the engine
 * moves a message in pieces.  @offset + @len must not exceed
 * @count * pb_mpi_type_size(t). */
void pb_mpi_pack_range(const void *buf, MPI_Count count, const pb_datatype_t *t, size_t offset,
                       void *dst, size_t len);
void pb_mpi_unpack_range(const void *src, size_t len, void *buf, MPI_Count count,
                         const pb_datatype_t *t, size_t offset);

/* How many basic elements @bytes of packed @t hold (MPI_Get_elements), or
 * MPI_UNDEFINED when @bytes does not end on a basic element. */
MPI_Count pb_mpi_type_elements(const pb_datatype_t *t, size_t bytes);

/* ---- lifetimes, kinds, and the registries of created handles ---- */

/* Keep @t alive until the matching release, even if the program frees its
 * handle meanwhile (a pending send or receive holds its datatype so).  Both
 * are no-ops on predefined types and thread safe. */
void pb_mpi_type_retain(pb_datatype_t *t);
void pb_mpi_type_release(pb_datatype_t *t);

/* The predefined datatype whose elements are one @kind (MPI_INT for
 * PB_BASIC_INT, MPI_DOUBLE_INT for PB_BASIC_DOUBLE_INT), or NULL for
 * PB_BASIC_NONE. */
pb_datatype_t *pb_mpi_type_of_basic(pb_basic_t kind);

/* 1 when @t is a created datatype that has been committed, or a predefined
 * one. */
int pb_mpi_type_is_committed(const pb_datatype_t *t);

/*
 * The set of live objects of one kind a library creates (datatypes, ops):
 * a hash set of their addresses, so that a handle is looked up without
 * dereferencing it (a freed or made-up handle is reported, never read), and
 * a table of small integers for MPI_<Object>_toint/_fromint.  Thread safe
 * (one mutex).  Define one with PB_MPI_REGISTRY_INIT.
 */
typedef struct {
    pthread_mutex_t lock;
    uintptr_t *keys;   /* open addressing; 0 free, 1 deleted */
    size_t cap;        /* slots in keys, a power of two (0 before the first add) */
    size_t used;       /* keys not free (live + deleted) */
    size_t live;       /* live keys */
    void **objs;       /* objs[i]: the object whose integer is PB_MPI_HANDLE_INT_BASE + i */
    size_t nobjs;      /* entries of objs in use (some may be NULL) */
    size_t objs_cap;   /* entries allocated */
    size_t first_free; /* no NULL entry of objs below this index */
} pb_mpi_registry_t;

#define PB_MPI_REGISTRY_INIT                                                                       \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, NULL, 0, 0, 0                                    \
    }

/* Created objects convert to integers from this value up (MPI-5.0 §20.3.4
 * keeps 1-4095 for the predefined handles); a handle pointer below it is a
 * predefined handle's ABI value, never an object of ours. */
#define PB_MPI_HANDLE_INT_BASE 0x1000

/* Add @obj; store its integer in *@int_p.  MPI_SUCCESS or MPI_ERR_NO_MEM. */
int pb_mpi_registry_add(pb_mpi_registry_t *reg, void *obj, int *int_p);
/* Remove @obj, whose integer is @handle_int. */
void pb_mpi_registry_remove(pb_mpi_registry_t *reg, void *obj, int handle_int);
/* 1 when @obj is live in @reg (the pointer is not dereferenced). */
int pb_mpi_registry_has(pb_mpi_registry_t *reg, const void *obj);
/* The live object whose integer is @handle_int, or NULL. */
void *pb_mpi_registry_at(pb_mpi_registry_t *reg, int handle_int);

#endif
