/*
 * The Postbox job API: who am I, who else is in my job, and on which node.
 *
 * A process finds its job through PMI: under `postbox run`, MPICH's Hydra
 * (mpiexec.hydra) or Slurm (srun --mpi=pmi2); started alone it is a
 * singleton, rank 0 of 1.  postbox_job_init also numbers the job's nodes
 * (distinct host/virtual-node pairs, in order of their lowest rank) and
 * makes this process's node the RSM node id (rsm_get_local_nodeid).
 *
 * Call postbox_job_init before the first RSM call: the RSM layer fixes the
 * job id, secret and node id when it first uses them.  See docs/boot.md.
 *
 * Functions returning int return -1 on error after logging one message on
 * stderr; before postbox_job_init (or after postbox_job_finalize) every
 * query fails this way.
 */
#ifndef POSTBOX_JOB_H
#define POSTBOX_JOB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Node ids are RSM node ids (rsm_node_id_t of postbox/rsm.h, the same
 * type); this header stands alone. */

/* postbox_job_node() of a rank outside the job */
#define POSTBOX_JOB_NODE_NONE ((uint32_t)-1)

/* longest key and value of postbox_job_kvs_put, terminating NUL included */
#define POSTBOX_JOB_KVS_KEY_MAX 64
#define POSTBOX_JOB_KVS_VALUE_MAX 1024

/**
 * Join the job: PMI init, then the node exchange (a collective: every rank
 * of the job must call it).  Idempotent: later calls return 0 at once.
 * Under a foreign launcher it also derives the job id and secret.
 * @return 0; -1 if the process manager cannot be reached or misbehaves,
 *         the RSM layer already used another node id or job, or the job
 *         was finalized (one message is printed).
 */
int postbox_job_init(void);

/** This process's rank, 0 to size - 1; -1 before postbox_job_init. */
int postbox_job_rank(void);

/** The number of ranks in the job; -1 before postbox_job_init. */
int postbox_job_size(void);

/*
 * A job started by `postbox run --universe U` with U greater than the
 * ranks it starts is a *universe* of U slots: postbox_job_size() is U,
 * postbox_job_rank() this process's slot, and the processes started
 * together (the first ranks; then those of each spawn) form a *world*, a
 * block of slots.  The node of every slot is known from the start, also of
 * the slots no process runs in yet.  Without a universe the job is one
 * world.  See docs/launch.md, "Spawning".
 */

/** Whether the job is a universe of slots that postbox_job_spawn can
 *  start processes in: 1, else 0 (also before postbox_job_init). */
int postbox_job_universe(void);

/** The first rank of this process's world (0 without a universe); its
 *  world is ranks first .. first + postbox_job_world_size() - 1.  -1
 *  before postbox_job_init. */
int postbox_job_world_first(void);

/** The number of processes of this process's world (postbox_job_size()
 *  without a universe); -1 before postbox_job_init. */
int postbox_job_world_size(void);

/** The index of this process's command in the spawn that started it (0
 *  for the first ranks; PMI's appnum, 0 when the process manager does not
 *  give one, as Slurm's PMI-2 does not); -1 before postbox_job_init. */
int postbox_job_appnum(void);

/* One command of postbox_job_spawn. */
typedef struct {
    const char *command; /* the program; without '/' it is searched in the PATH */
    char *const *argv;   /* its arguments, NULL-terminated (NULL: none) */
    int nprocs;          /* how many processes run it, at least 1 */
    int ninfo;           /* the info keys given with it (the launcher reads `wdir`) */
    const char *const *info_keys;
    const char *const *info_values;
} postbox_job_spawn_cmd_t;

/* postbox_job_spawn results besides 0 and -1 */
#define POSTBOX_JOB_SPAWN_REFUSED 1    /* the launcher refused: @why says why */
#define POSTBOX_JOB_SPAWN_NO_SERVICE 2 /* a launcher without spawn, or a singleton */

/**
 * Start the processes of @count commands as one new world in the next
 * free slots of the universe (PMI spawn), with the @npreput keys
 * @preput_keys = @preput_values in the new world's key-value space.  Not
 * collective: one process asks.  The launcher starts every process or
 * none.
 * @return 0 (every process started); POSTBOX_JOB_SPAWN_REFUSED (the
 *         launcher's reason in @why, @why_len bytes: too few free slots, a
 *         program not found, ...); POSTBOX_JOB_SPAWN_NO_SERVICE (nothing
 *         printed); -1 on a bad argument or a PMI failure (printed).
 */
int postbox_job_spawn(int count, const postbox_job_spawn_cmd_t *cmds, int npreput,
                      const char *const *preput_keys, const char *const *preput_values, char *why,
                      size_t why_len);

/**
 * The job id: POSTBOX_JOB_ID under `postbox run`, "pmi-<kvsname>" under
 * Hydra or Slurm, "solo-<uid>" for a singleton.  Processes of different
 * jobs cannot reach each other's RSM segments.
 * @return the id (static storage); NULL before postbox_job_init.
 */
const char *postbox_job_id(void);

/** The number of distinct nodes of the job; -1 before postbox_job_init. */
int postbox_job_node_count(void);

/**
 * The node of @rank (0 to postbox_job_node_count() - 1); the node of this
 * process is also rsm_get_local_nodeid().
 * @return the node id; POSTBOX_JOB_NODE_NONE if @rank is outside the job
 *         or before postbox_job_init.
 */
uint32_t postbox_job_node(int rank);

/**
 * The name of @node: "<hostname>/<virtual node>", e.g. "host/0".  The
 * string lives until postbox_job_finalize.
 * @return the name; NULL if @node is not a node of the job.
 */
const char *postbox_job_node_name(uint32_t node);

/**
 * Store the ranks on this process's node, ascending, in @ranks (at most
 * @max of them; @ranks may be NULL when @max is 0).
 * @return how many ranks share the node (this one included, so at least
 *         1; may exceed @max); -1 before postbox_job_init or if @max < 0.
 */
int postbox_job_local_ranks(int *ranks, int max);

/**
 * Put @key = @value in the job's key-value space; other ranks see it after
 * the next postbox_job_fence.  Keys are 1 to 63 of [A-Za-z0-9_/-] and
 * should not start with "pb-" (Postbox's own); values are printable text
 * without spaces (not every process manager unescapes them)
 * of at most 1023 bytes.
 * @return 0; -1 on a bad key or value or a PMI failure.
 */
int postbox_job_kvs_put(const char *key, const char *value);

/**
 * Get the value of @key into @value (@len bytes, NUL terminated).
 * @return 0 if found; 1 if the space has no such key (nothing printed,
 *         @value is ""); -1 on a bad key, a value longer than @len - 1 or
 *         a PMI failure.
 */
int postbox_job_kvs_get(const char *key, char *value, size_t len);

/**
 * Collective: wait for every rank of the job, and make every earlier put
 * visible to every later get.
 * @return 0; -1 on a PMI failure.
 */
int postbox_job_fence(void);

/* postbox_job_name_* results besides 0 and -1 */
#define POSTBOX_JOB_NAME_TAKEN 1      /* publish: the service is published already */
#define POSTBOX_JOB_NAME_NOT_FOUND 2  /* unpublish, lookup: no such service */
#define POSTBOX_JOB_NAME_NO_SERVICE 3 /* a singleton, or a launcher without one */

/**
 * The launcher's name service, shared by every job it serves: publish
 * @service (any text of 1 to 1023 bytes) as @port, withdraw it, or look
 * it up into @port (@len bytes, NUL terminated).  `postbox run` offers it
 * (PMI-1 publish_name, unpublish_name, lookup_name; PMI-2 name-publish,
 * -unpublish, -lookup); a singleton has none.
 * @return 0; POSTBOX_JOB_NAME_TAKEN, _NOT_FOUND or _NO_SERVICE (nothing
 *         printed); -1 on a bad argument or a PMI failure (printed).
 */
int postbox_job_name_publish(const char *service, const char *port);
int postbox_job_name_unpublish(const char *service);
int postbox_job_name_lookup(const char *service, char *port, size_t len);

/**
 * Leave the job: tell the process manager, close the connection, free the
 * node table.  RSM keeps working (the node id stays).
 * @return 0; -1 if not initialised or the goodbye failed.
 */
int postbox_job_finalize(void);

/**
 * End the whole job: print @message (may be NULL), ask the process manager
 * to kill every rank, and exit this process with @exit_code.
 */
void postbox_job_abort(int exit_code, const char *message) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif
