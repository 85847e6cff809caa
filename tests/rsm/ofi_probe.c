/*
 * Whether this host's libfabric offers the provider named in argv[1] with
 * what the ofi transport needs (RMA and messages on a reliable datagram
 * endpoint): exit 0 if so, else a line saying why and exit 77, the status
 * CTest reports as a skip.  tests/rsm/ofi_run.sh runs it before a suite.
 */
#include <rdma/fabric.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    struct fi_info *hints, *info = NULL;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: pbt-ofi-probe PROVIDER\n");
        return 2;
    }
    hints = fi_allocinfo();
    if (hints == NULL)
        return 2;
    hints->caps = FI_MSG | FI_RMA;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode =
        FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->fabric_attr->prov_name = strdup(argv[1]);
    rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (rc != 0) {
        printf("skipped: libfabric offers no provider '%s' with RMA on a reliable datagram "
               "endpoint (%s)\n",
               argv[1], fi_strerror(-rc));
        return 77;
    }
    fi_freeinfo(info);
    return 0;
}
