/*
 * What the ofi transport offers the rest of the library besides its ops
 * table (transport.h): a line on its state, for `postbox info`.
 */
#ifndef PB_RSM_OFI_H
#define PB_RSM_OFI_H

/* "ofi: built (...)" with what it cannot do, or "ofi: not built
 * (libfabric-dev missing)" in a library built without libfabric. */
const char *pb_ofi_describe(void);

#endif
