/*
 * What Boot offers the layers above it inside the library, besides the
 * job identity (boot/identity.h): a place in the job's key-value exchange.
 *
 * postbox_job_init puts this rank's node name, fences, and reads every
 * rank's.  A layer that needs other ranks to learn something of this one
 * by then (the tcp transport: the address it listens on) registers a
 * contributor once, when the library is loaded; postbox_job_init calls
 * every contributor on every rank, in the order registered, before its
 * fence, and what they put is readable with postbox_job_kvs_get on every
 * rank once postbox_job_init returns.  Boot itself names no layer above.
 */
#ifndef PB_BOOT_BOOT_H
#define PB_BOOT_BOOT_H

#include "util/status.h"

/* at most this many contributors */
#define PB_BOOT_KVS_CONTRIBUTORS_MAX 4

/* Put @key = @value in the exchange (keys start with "pb-": Postbox's own).
 * @ctx is the one the contributor was handed.
 * @return PB_OK, or the process manager's error (logged). */
typedef pb_status_t (*pb_boot_kvs_put_func_t)(void *ctx, const char *key, const char *value);

/* A contribution: put this process's keys, as rank @rank, with @put(@ctx,
 * ...).  Called from postbox_job_init before its fence; the job's rank
 * count, nodes and identity are not complete yet, so it must not read them.
 * @return PB_OK (also when it has nothing to put), or an error that fails
 * postbox_job_init (return what @put returned). */
typedef pb_status_t (*pb_boot_kvs_contributor_func_t)(int rank, pb_boot_kvs_put_func_t put,
                                                      void *ctx);

/* Register @fn for every later postbox_job_init (call it while the library
 * is loaded: single-threaded, before any postbox_job_init).
 * @return PB_OK; PB_ERR_NO_RESOURCE when PB_BOOT_KVS_CONTRIBUTORS_MAX are
 * registered already. */
pb_status_t pb_boot_kvs_contribute(pb_boot_kvs_contributor_func_t fn);

#endif
