/*
 * The table that chooses collective algorithms (coll_table.h).
 *
 * A rule is one line of six fields:
 *
 *   collective  ranks  ranks-per-node  nodes  bytes  algorithm
 *
 * each count field `*` (any), `N`, `N-` (N and more) or `N-M`; bytes take
 * K, M and G suffixes (of 1024).  ranks is the communicator's size,
 * ranks-per-node the most ranks of it on one node, nodes how many nodes
 * it spans.  '#' starts a comment.  The first rule that matches wins.
 */
#include "mpi/coll_table.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/engine/engine.h"
#include "util/log.h"

/* src/mpi/coll_table.txt, built in by CMake (coll_table_default.c) */
extern const char pb_coll_table_default[];

static const char *const kind_names[PB_COLL_KINDS] = {
    [PB_COLL_BARRIER] = "barrier",     [PB_COLL_BCAST] = "bcast",
    [PB_COLL_REDUCE] = "reduce",       [PB_COLL_ALLREDUCE] = "allreduce",
    [PB_COLL_GATHER] = "gather",       [PB_COLL_SCATTER] = "scatter",
    [PB_COLL_ALLGATHER] = "allgather", [PB_COLL_ALLTOALL] = "alltoall",
};

static const char *const alg_names[PB_ALG_COUNT] = {
    [PB_ALG_NODE] = "node",
    [PB_ALG_NODE_CMA] = "node_cma",
    [PB_ALG_NODE_AUTO] = "node_auto",
    [PB_ALG_DISSEMINATION] = "dissemination",
    [PB_ALG_BINOMIAL] = "binomial",
    [PB_ALG_SCATTER_ALLGATHER] = "scatter_allgather",
    [PB_ALG_RECURSIVE_DOUBLING] = "recursive_doubling",
    [PB_ALG_RABENSEIFNER] = "rabenseifner",
    [PB_ALG_DIRECT] = "direct",
    [PB_ALG_RING] = "ring",
};

/* Each collective's algorithms, its point-to-point fallback first. */
static const pb_coll_alg_t kind_algs[PB_COLL_KINDS][6] = {
    [PB_COLL_BARRIER] = {PB_ALG_DISSEMINATION, PB_ALG_NODE, PB_ALG_COUNT},
    [PB_COLL_BCAST] = {PB_ALG_BINOMIAL, PB_ALG_SCATTER_ALLGATHER, PB_ALG_NODE, PB_ALG_NODE_CMA,
                       PB_ALG_NODE_AUTO, PB_ALG_COUNT},
    [PB_COLL_REDUCE] = {PB_ALG_BINOMIAL, PB_ALG_RABENSEIFNER, PB_ALG_NODE, PB_ALG_NODE_CMA,
                        PB_ALG_NODE_AUTO, PB_ALG_COUNT},
    [PB_COLL_ALLREDUCE] = {PB_ALG_RECURSIVE_DOUBLING, PB_ALG_RABENSEIFNER, PB_ALG_NODE,
                           PB_ALG_NODE_CMA, PB_ALG_NODE_AUTO, PB_ALG_COUNT},
    [PB_COLL_GATHER] = {PB_ALG_DIRECT, PB_ALG_NODE, PB_ALG_NODE_CMA, PB_ALG_NODE_AUTO,
                        PB_ALG_COUNT},
    [PB_COLL_SCATTER] = {PB_ALG_DIRECT, PB_ALG_NODE, PB_ALG_NODE_CMA, PB_ALG_NODE_AUTO,
                         PB_ALG_COUNT},
    [PB_COLL_ALLGATHER] = {PB_ALG_RING, PB_ALG_RECURSIVE_DOUBLING, PB_ALG_NODE, PB_ALG_NODE_CMA,
                           PB_ALG_COUNT},
    [PB_COLL_ALLTOALL] = {PB_ALG_DIRECT, PB_ALG_NODE, PB_ALG_NODE_CMA, PB_ALG_COUNT},
};

typedef struct {
    long lo, hi; /* inclusive; hi -1: no bound */
} range_t;

typedef struct {
    pb_coll_kind_t kind;
    range_t ranks, ppn, nodes, bytes;
    pb_coll_alg_t alg;
} rule_t;

static struct {
    int read;
    rule_t *rules;
    int nrules;
    int forced[PB_COLL_KINDS]; /* POSTBOX_COLL_ALGORITHM: alg + 1, or 0 */
    /* each collective's last choice and what it was made for (size 0:
     * none yet): a program calls one collective of one size over and
     * over.  Written under the library lock, as every MPI call runs */
    struct {
        int size, ppn, nodes;
        size_t bytes;
        pb_coll_alg_t alg;
    } last[PB_COLL_KINDS];
    int stats;
    /* relaxed words: MPI_T reads them from any thread (pb_coll_runs) */
    _Atomic unsigned long runs[PB_COLL_KINDS][PB_ALG_COUNT];
} table;

static int kind_has(pb_coll_kind_t kind, pb_coll_alg_t alg)
{
    for (int i = 0; kind_algs[kind][i] != PB_ALG_COUNT; i++) {
        if (kind_algs[kind][i] == alg)
            return 1;
    }
    return 0;
}

static int find_name(const char *const *names, int n, const char *word)
{
    for (int i = 0; i < n; i++) {
        if (names[i] != NULL && strcmp(names[i], word) == 0)
            return i;
    }
    return -1;
}

/* One count: decimal with an optional K, M or G suffix.  @return 0, or -1. */
static int parse_count(const char *s, size_t len, long *value_p)
{
    long value = 0, unit = 1;

    if (len > 0 && strchr("KMG", s[len - 1]) != NULL) {
        unit = s[len - 1] == 'K' ? 1L << 10 : s[len - 1] == 'M' ? 1L << 20 : 1L << 30;
        len--;
    }
    if (len == 0 || len > 12)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        value = value * 10 + (s[i] - '0');
    }
    *value_p = value * unit;
    return 0;
}

static int parse_range(const char *word, range_t *r)
{
    const char *dash = strchr(word, '-');

    if (strcmp(word, "*") == 0) {
        *r = (range_t){0, -1};
        return 0;
    }
    if (dash == NULL) {
        if (parse_count(word, strlen(word), &r->lo) != 0)
            return -1;
        r->hi = r->lo;
        return 0;
    }
    if (parse_count(word, (size_t)(dash - word), &r->lo) != 0)
        return -1;
    if (dash[1] == '\0') {
        r->hi = -1;
        return 0;
    }
    if (parse_count(dash + 1, strlen(dash + 1), &r->hi) != 0 || r->hi < r->lo)
        return -1;
    return 0;
}

static int in_range(const range_t *r, long v)
{
    return v >= r->lo && (r->hi < 0 || v <= r->hi);
}

/* Parse @text into *@rules_p (NULL: only check).  @return 0, or the
 * number of the first bad line with *@why_p set. */
static int parse(const char *text, rule_t **rules_p, int *nrules_p, const char **why_p)
{
    int line_no = 0, n = 0, cap = 0;
    rule_t *rules = NULL;

    for (const char *p = text; *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        char line[256], *words[7], *save = NULL;
        int nwords = 0, kind, alg;
        rule_t rule;

        line_no++;
        if (len >= sizeof(line)) {
            *why_p = "line too long";
            goto bad;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (end != NULL);
        if (strchr(line, '#') != NULL)
            *strchr(line, '#') = '\0';
        for (char *w = strtok_r(line, " \t\r", &save); w != NULL && nwords < 7;
             w = strtok_r(NULL, " \t\r", &save))
            words[nwords++] = w;
        if (nwords == 0)
            continue;
        if (nwords != 6) {
            *why_p = "a rule has six fields: collective ranks ranks-per-node nodes bytes algorithm";
            goto bad;
        }
        kind = find_name(kind_names, PB_COLL_KINDS, words[0]);
        alg = find_name(alg_names, PB_ALG_COUNT, words[5]);
        if (kind < 0) {
            *why_p = "unknown collective";
            goto bad;
        }
        if (alg < 0 || !kind_has((pb_coll_kind_t)kind, (pb_coll_alg_t)alg)) {
            *why_p = "not an algorithm of that collective";
            goto bad;
        }
        rule.kind = (pb_coll_kind_t)kind;
        rule.alg = (pb_coll_alg_t)alg;
        if (parse_range(words[1], &rule.ranks) != 0 || parse_range(words[2], &rule.ppn) != 0 ||
            parse_range(words[3], &rule.nodes) != 0 || parse_range(words[4], &rule.bytes) != 0) {
            *why_p = "a range is *, N, N- or N-M (bytes may end in K, M or G)";
            goto bad;
        }
        if (rules_p == NULL)
            continue;
        if (n == cap) {
            rule_t *more = realloc(rules, (size_t)(cap = cap ? 2 * cap : 32) * sizeof(*rules));

            if (more == NULL) {
                *why_p = "out of memory";
                goto bad;
            }
            rules = more;
        }
        rules[n++] = rule;
    }
    if (rules_p != NULL) {
        *rules_p = rules;
        *nrules_p = n;
    }
    return 0;
bad:
    free(rules);
    return line_no;
}

int pb_coll_table_check(const char *text, const char **why_p)
{
    return parse(text, NULL, NULL, why_p);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = NULL;
    long size;

    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && size < (1L << 20) &&
        fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)size + 1)) != NULL) {
        if (fread(text, 1, (size_t)size, f) != (size_t)size) {
            free(text);
            text = NULL;
        } else {
            text[size] = '\0';
        }
    }
    fclose(f);
    return text;
}

/* POSTBOX_COLL_ALGORITHM: "collective:algorithm,..." */
static void read_forced(const char *spec)
{
    char buf[512], *save = NULL;

    if (spec == NULL || *spec == '\0')
        return;
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        int kind, alg;

        if (colon == NULL) {
            pb_warn("POSTBOX_COLL_ALGORITHM: '%s' is not collective:algorithm; ignored", item);
            continue;
        }
        *colon = '\0';
        kind = find_name(kind_names, PB_COLL_KINDS, item);
        alg = find_name(alg_names, PB_ALG_COUNT, colon + 1);
        if (kind < 0 || alg < 0 || !kind_has((pb_coll_kind_t)kind, (pb_coll_alg_t)alg)) {
            pb_warn("POSTBOX_COLL_ALGORITHM: %s has no algorithm '%s'; ignored", item, colon + 1);
            continue;
        }
        table.forced[kind] = alg + 1;
    }
}

static void read_table(void)
{
    const pb_config_entry_t *t = pb_eng_tunables_table();
    const char *path = pb_config_table_get_string(t, "POSTBOX_COLL_TABLE");
    const char *why = NULL;
    char *text = NULL;
    int bad = 0;

    table.read = 1;
    table.stats = pb_config_table_get_long(t, "POSTBOX_COLL_STATS") > 0;
    read_forced(pb_config_table_get_string(t, "POSTBOX_COLL_ALGORITHM"));
    if (path != NULL && *path != '\0') {
        text = read_file(path);
        if (text == NULL)
            pb_warn("POSTBOX_COLL_TABLE: cannot read %s; using the built-in table", path);
        else if ((bad = parse(text, &table.rules, &table.nrules, &why)) != 0)
            pb_warn("POSTBOX_COLL_TABLE: %s line %d: %s; using the built-in table", path, bad, why);
        free(text);
        if (text != NULL && bad == 0)
            return;
    }
    if ((bad = parse(pb_coll_table_default, &table.rules, &table.nrules, &why)) != 0)
        pb_warn("the built-in collective table, line %d: %s", bad, why);
}

/* The communicator's spread: the most ranks on one node, and the nodes. */
static void spread(pb_comm_t *c)
{
    int nodes = 0, ppn = 0;

    for (int r = 0; r < c->size; r++) {
        int node = pb_eng_channel.node_of[c->world[r]], first = 1, here = 0;

        for (int q = 0; q < c->size; q++) {
            if (pb_eng_channel.node_of[c->world[q]] != node)
                continue;
            if (q < r)
                first = 0;
            here++;
        }
        nodes += first;
        ppn = here > ppn ? here : ppn;
    }
    c->coll_nodes = nodes;
    c->coll_ppn = ppn;
}

/* The first rule of the table that matches. */
static pb_coll_alg_t choose(pb_coll_kind_t kind, const pb_comm_t *c, size_t bytes)
{
    for (int i = 0; i < table.nrules; i++) {
        const rule_t *r = &table.rules[i];

        if (r->kind == kind && in_range(&r->ranks, c->size) && in_range(&r->ppn, c->coll_ppn) &&
            in_range(&r->nodes, c->coll_nodes) && in_range(&r->bytes, (long)bytes))
            return r->alg;
    }
    return kind_algs[kind][0];
}

pb_coll_alg_t pb_coll_choose(pb_coll_kind_t kind, pb_comm_t *c, size_t bytes)
{
    if (!table.read)
        read_table();
    if (table.forced[kind])
        return (pb_coll_alg_t)(table.forced[kind] - 1);
    if (c->coll_nodes == 0)
        spread(c);
    if (table.last[kind].size == c->size && table.last[kind].bytes == bytes &&
        table.last[kind].ppn == c->coll_ppn && table.last[kind].nodes == c->coll_nodes)
        return table.last[kind].alg;
    table.last[kind].size = c->size;
    table.last[kind].ppn = c->coll_ppn;
    table.last[kind].nodes = c->coll_nodes;
    table.last[kind].bytes = bytes;
    table.last[kind].alg = choose(kind, c, bytes);
    return table.last[kind].alg;
}

pb_coll_alg_t pb_coll_fallback(pb_coll_kind_t kind)
{
    return kind_algs[kind][0];
}

_Atomic(pb_coll_ran_hook_t *) pb_coll_ran_hook;

void pb_coll_ran(pb_coll_kind_t kind, pb_coll_alg_t alg)
{
    pb_coll_ran_hook_t *hook = atomic_load_explicit(&pb_coll_ran_hook, memory_order_relaxed);

    atomic_store_explicit(&table.runs[kind][alg], pb_coll_runs(kind, alg) + 1,
                          memory_order_relaxed);
    if (PB_UNLIKELY(hook != NULL))
        hook(kind, alg);
}

const char *pb_coll_kind_name(pb_coll_kind_t kind)
{
    return kind_names[kind];
}

const char *pb_coll_alg_name(pb_coll_alg_t alg)
{
    return alg_names[alg];
}

int pb_coll_kind_has_alg(pb_coll_kind_t kind, pb_coll_alg_t alg)
{
    return kind_has(kind, alg);
}

unsigned long pb_coll_runs(pb_coll_kind_t kind, pb_coll_alg_t alg)
{
    return atomic_load_explicit(&table.runs[kind][alg], memory_order_relaxed);
}

int pb_coll_stats_get(void)
{
    if (!table.read)
        return pb_config_table_get_long(pb_eng_tunables_table(), "POSTBOX_COLL_STATS") > 0;
    return table.stats;
}

void pb_coll_stats_set(int on)
{
    if (!table.read)
        read_table();
    table.stats = on;
}

void pb_coll_table_finalize(void)
{
    char line[1024];
    size_t len = 0;

    if (table.stats) {
        len = (size_t)snprintf(line, sizeof(line),
                               "postbox: rank %d collectives:", pb_eng_channel.rank);
        for (int k = 0; k < PB_COLL_KINDS; k++) {
            for (int a = 0; a < PB_ALG_COUNT; a++) {
                unsigned long runs = pb_coll_runs((pb_coll_kind_t)k, (pb_coll_alg_t)a);

                if (runs > 0 && len < sizeof(line))
                    len += (size_t)snprintf(line + len, sizeof(line) - len, " %s:%s=%lu",
                                            kind_names[k], alg_names[a], runs);
            }
        }
        fprintf(stderr, "%s\n", line);
    }
    free(table.rules);
    memset(&table, 0, sizeof(table));
}
