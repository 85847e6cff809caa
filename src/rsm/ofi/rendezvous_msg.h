/*
 * The ofi transport's rendezvous messages (docs/ofi.md, "Finding a
 * segment").  They have no libfabric type in them: the tcp transport's
 * LOOKUP relay (src/rsm/tcp/dial.c) reads an ofi exporter's HELLO for the
 * TCP address where that exporter also takes rendezvous connections.
 *
 * On a node's abstract socket (SOCK_SEQPACKET) each message is one
 * packet; over TCP the same bytes follow one another, each message of the
 * fixed size of its type, read whole before it is looked at.
 */
#ifndef PB_RSM_OFI_RENDEZVOUS_MSG_H
#define PB_RSM_OFI_RENDEZVOUS_MSG_H

#include <stdint.h>

#define OFI_RENDEZVOUS_PREFIX "postbox-ofi"
/* the longest fabric address (fi_getname) the transport handles */
#define PB_OFI_NAME_MAX 64

#define PB_OFI_RV_MAGIC 0x4f425056u /* "VPBO" */
enum {
    OFI_RV_HELLO = 1,
    OFI_RV_REQUEST = 2,
    OFI_RV_REPLY = 3,
    OFI_RV_REBASE = 4,
    OFI_RV_WITHDRAWN = 5,
};

/* exporter -> importer, first: the nonce the request must MAC, and where
 * the exporter's process takes rendezvous connections over TCP (addr 0,
 * port 0: it does not), which is what a relayed lookup answers */
typedef struct {
    uint32_t magic;
    uint32_t type;
    uint8_t nonce[16];
    uint32_t tcp_addr; /* IPv4, network order */
    uint16_t tcp_port; /* host order */
    uint16_t reserved;
} pb_ofi_rv_hello_t;

/* importer -> exporter: the segment (over TCP the connection is the
 * process's, not the segment's), who asks and what for, MACed with the
 * hello's nonce under the job secret */
typedef struct {
    uint32_t magic;
    uint32_t type;
    uint32_t node;
    uint32_t segid;
    uint32_t perm;
    uint32_t import_token;
    uint32_t name_len;
    uint32_t reserved;
    uint8_t nonce[16];
    uint8_t name[PB_OFI_NAME_MAX];
    uint64_t mac;
} pb_ofi_rv_request_t;

typedef struct {
    uint32_t magic;
    uint32_t type;
    int32_t status;
    uint32_t perm;
    uint32_t attach_token;
    uint32_t name_len;
    uint64_t size;
    uint64_t key;
    uint64_t base;
    uint8_t name[PB_OFI_NAME_MAX];
    uint64_t mac;
} pb_ofi_rv_reply_t;

/* REBASE: the segment's key and address changed (rebind); WITHDRAWN */
typedef struct {
    uint32_t magic;
    uint32_t type;
    uint64_t key;
    uint64_t base;
} pb_ofi_rv_notice_t;

#endif
