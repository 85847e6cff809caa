/*
 * postbox-transport-probe: say which RSM transports the library has and
 * whether each works here, for `postbox info`.
 *
 *   postbox-transport-probe --list    one line per transport of the library
 *   postbox-transport-probe NAME      probe transport NAME: one JSON object
 *
 * A probe does, in this one process, what a program does between two: get
 * the controller, export and publish a page, connect to it through the
 * transport from this node, put 8 bytes, get them back and see them in the
 * exported page, then take everything down.  It prints
 *
 *   {"transport": "tcp", "available": true, "page_size": 4096,
 *    "max_segment_size": N, "can_map": false}
 *   {"transport": "tcp", "available": false, "step": "connect", "error": "..."}
 *
 * and exits 0 either way (1 for a usage error); the library's own messages
 * on stderr say more about a failed step.
 */
#include <postbox/rsm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The transports of the library, from its interconnect topology: a
 * transport with several rails is listed once per rail ("tcp0", "tcp1"),
 * so instance numbers are dropped and repeats skipped. */
static int list_transports(void)
{
    rsm_topology_t *topology = NULL;
    char seen[16][RSM_MAXNAMELEN];
    unsigned seen_count = 0;
    int ret;

    ret = rsm_get_interconnect_topology(&topology);
    if (ret != RSM_SUCCESS) {
        fprintf(stderr, "postbox-transport-probe: rsm_get_interconnect_topology: %s\n",
                rsm_strerror(ret));
        return 1;
    }
    for (uint_t i = 0; i < topology->topology_hdr.local_cntlr_count; i++) {
        char name[RSM_MAXNAMELEN];
        size_t len;
        unsigned j;

        snprintf(name, sizeof(name), "%s", topology->connections[i]->hdr.cntlr_name);
        len = strlen(name);
        while (len > 1 && name[len - 1] >= '0' && name[len - 1] <= '9')
            name[--len] = '\0';
        for (j = 0; j < seen_count && strcmp(seen[j], name) != 0; j++)
            ;
        if (j < seen_count || seen_count == sizeof(seen) / sizeof(seen[0]))
            continue;
        memcpy(seen[seen_count++], name, sizeof(name));
        printf("%s\n", name);
    }
    rsm_free_interconnect_topology(topology);
    return 0;
}

/* Print @text as a JSON string literal (the names and messages printed
 * here are plain ASCII; anything else is escaped). */
static void put_json_string(const char *text)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void put_failure(const char *name, const char *step, const char *error)
{
    fputs("{\"transport\": ", stdout);
    put_json_string(name);
    fputs(", \"available\": false, \"step\": ", stdout);
    put_json_string(step);
    fputs(", \"error\": ", stdout);
    put_json_string(error);
    fputs("}\n", stdout);
}

/* Probe transport @name and print the verdict. */
static int probe(const char *name)
{
    rsmapi_controller_handle_t controller = NULL;
    rsmapi_controller_attr_t attr;
    rsm_memseg_export_handle_t export = NULL;
    rsm_memseg_import_handle_t import = NULL;
    rsm_memseg_id_t segid = 0;
    const uint64_t sent = 0x706f7374626f7821ull; /* "postbox!" */
    uint64_t back = 0;
    const char *step;
    void *page = NULL;
    int published = 0, ret;

    step = "get controller";
    ret = rsm_get_controller((char *)name, &controller);
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "controller attributes";
    ret = rsm_get_controller_attr(controller, &attr);
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "allocate a page";
    ret = RSMERR_INSUFFICIENT_MEM;
    if (posix_memalign(&page, attr.attr_page_size, attr.attr_page_size) != 0)
        goto fail;
    memset(page, 0, attr.attr_page_size);
    step = "export create";
    ret = rsm_memseg_export_create(controller, &export, page, attr.attr_page_size, 0);
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "export publish";
    ret = rsm_memseg_export_publish(export, &segid, NULL, 0);
    if (ret != RSM_SUCCESS)
        goto fail;
    published = 1;
    step = "import connect";
    ret = rsm_memseg_import_connect(controller, rsm_get_local_nodeid(), segid, RSM_PERM_RDWR,
                                    &import);
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "put";
    ret = rsm_memseg_import_put(import, 0, (void *)&sent, sizeof(sent));
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "get";
    ret = rsm_memseg_import_get(import, 0, &back, sizeof(back));
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "compare";
    if (back != sent || memcmp(page, &sent, sizeof(sent)) != 0) {
        put_failure(name, step, "the bytes got back or seen in the exported page differ");
        ret = RSM_SUCCESS;
        goto out;
    }
    step = "import disconnect";
    ret = rsm_memseg_import_disconnect(import);
    import = NULL;
    if (ret != RSM_SUCCESS)
        goto fail;
    step = "export unpublish";
    ret = rsm_memseg_export_unpublish(export);
    published = 0;
    if (ret != RSM_SUCCESS)
        goto fail;

    fputs("{\"transport\": ", stdout);
    put_json_string(name);
    printf(", \"available\": true, \"page_size\": %zu, \"max_segment_size\": %zu"
           ", \"can_map\": %s}\n",
           attr.attr_page_size, attr.attr_max_export_segment_size,
           attr.attr_max_import_map_size > 0 ? "true" : "false");
    goto out;

fail:
    put_failure(name, step,
                ret == RSMERR_CTLR_NOT_PRESENT ? "the library has no such transport"
                                               : rsm_strerror(ret));
out:
    if (import != NULL)
        (void)rsm_memseg_import_disconnect(import);
    if (published)
        (void)rsm_memseg_export_unpublish(export);
    if (export != NULL)
        (void)rsm_memseg_export_destroy(export);
    if (controller != NULL)
        (void)rsm_release_controller(controller);
    free(page);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0)
        return list_transports();
    if (argc == 2 && argv[1][0] != '-' && argv[1][0] != '\0') {
        int ret = probe(argv[1]);

        return fflush(stdout) == 0 ? ret : 1;
    }
    fprintf(stderr, "usage: postbox-transport-probe --list | NAME\n");
    return 1;
}
