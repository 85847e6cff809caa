/*
 * The tcp transport's wire format (version 2), described for users in
 * docs/tcp.md.  This file holds what can be checked without a socket: the
 * message layouts, their encoding (little endian on the wire), the
 * handshake's MACs and the session keys derived from it, the frame MACs,
 * the checks every frame header passes, the receive state machine that
 * turns a byte stream into authenticated frames, and what the exporter
 * does with a frame given the slot it names (where the payload goes, the
 * bounds check against the segment, the word-last store).  The other
 * files of src/rsm/tcp/ drive it from sockets; the libFuzzer target
 * tests/fuzz/fuzz_tcp_wire.c drives the same code from arbitrary bytes.
 *
 * A connection goes from an importing process to an exporting process.
 * The handshake (hello, auth, welcome) is a challenge-response under the
 * job's 16-byte key, which never crosses the wire, bound to both sides'
 * nonces and to the addresses and ports the importer dialed from and to.
 * Each direction then has its own session key, derived from the job key
 * and that transcript, and a 64-bit frame counter: every frame is a
 * 40-byte header whose last 8 bytes MAC the counter and the rest of the
 * header, then `length` payload bytes, then (when the connection MACs
 * payloads: between hosts) an 8-byte MAC of the payload.
 */
#ifndef PB_RSM_TCP_WIRE_H
#define PB_RSM_TCP_WIRE_H

#include <postbox/rsm.h>
#include <stddef.h>
#include <stdint.h>

#include "util/siphash.h"
#include "util/status.h"

#define PB_TCP_MAGIC 0x57544250u /* "PBTW" read as little endian */
#define PB_TCP_VERSION 2
#define PB_TCP_NONCE_LEN 16
#define PB_TCP_KEY_LEN 16
#define PB_TCP_JOB_ID_MAX 48
#define PB_TCP_FRAME_HEADER_SIZE 40
/* where the header's MAC starts: it covers the sequence number and the
 * PB_TCP_FRAME_MAC_OFFSET bytes before it */
#define PB_TCP_FRAME_MAC_OFFSET 32
/* the payload MAC after a frame's payload, when the connection has them */
#define PB_TCP_PAYLOAD_MAC_SIZE 8
/* the largest payload of one frame; longer puts are cut into frames */
#define PB_TCP_MAX_PAYLOAD (1u << 30)
/* the most imports one connection may have attached at once (slot
 * numbers are 1 .. this); an ATTACH beyond is answered PB_ERR_NO_RESOURCE.
 * What a post at the exporter queues, and its cost, grows with it. */
#define PB_TCP_MAX_SLOTS 4096u
/* the most bytes one GET may ask for (so the longest REPLY): the exporter
 * copies a reply whole into its queue, so this bounds what one request
 * makes it hold; longer gets are cut into several GETs */
#define PB_TCP_MAX_GET (1u << 20)
/* the longest request a CALL carries, and the longest reply it asks for
 * (PB_RSM_CALL_MAX) */
#define PB_TCP_MAX_CALL (1u << 20)

/* ---- handshake -------------------------------------------------------------- */

enum {
    PB_TCP_MSG_HELLO = 1,     /* exporter -> importer, first */
    PB_TCP_MSG_AUTH = 2,      /* importer -> exporter */
    PB_TCP_MSG_WELCOME = 3,   /* exporter -> importer; frames follow */
    PB_TCP_MSG_DIRECTORY = 4, /* rendezvous reply on the local unix socket */
    /* exporter -> importer instead of WELCOME, to an AUTH it does not
     * admit: the size of a WELCOME, all zero after the header, no MAC (so
     * it tells an impostor nothing it could not see from the close that
     * follows; an importer tells it from an exporter that died) */
    PB_TCP_MSG_REFUSED = 5
};

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
} pb_tcp_msg_hdr_t;

typedef struct {
    pb_tcp_msg_hdr_t hdr;
    uint8_t nonce[PB_TCP_NONCE_LEN]; /* the exporter's challenge */
} pb_tcp_hello_t;

/* AUTH and WELCOME flags */
#define PB_TCP_HS_PAYLOAD_MAC 1u /* AUTH: the importer wants payload MACs; WELCOME: they are on */

typedef struct {
    pb_tcp_msg_hdr_t hdr;
    uint32_t node; /* the importer's RSM node id: access lists are per node */
    uint32_t pid;  /* for log messages only */
    char job_id[PB_TCP_JOB_ID_MAX];
    uint8_t nonce[PB_TCP_NONCE_LEN]; /* the importer's challenge */
    /* the connection as the importer sees it, network order: the address
     * and port it dialed, and its own (the exporter compares them with
     * its getsockname and getpeername) */
    uint32_t dial_addr;
    uint32_t source_addr;
    uint16_t dial_port;
    uint16_t source_port;
    uint32_t flags; /* PB_TCP_HS_PAYLOAD_MAC or 0 */
    uint64_t mac;   /* pb_tcp_auth_mac(key, hello nonce, this) */
} pb_tcp_auth_t;

/* sent only to an importer the exporter admits (one it does not gets
 * REFUSED, or the connection closed) */
typedef struct {
    pb_tcp_msg_hdr_t hdr;
    uint32_t reserved; /* 0 */
    uint32_t flags;    /* PB_TCP_HS_PAYLOAD_MAC: the connection MACs payloads */
    uint32_t node;     /* the exporter's RSM node id */
    uint32_t pid;      /* the exporter's pid, for log messages */
    uint64_t mac;      /* pb_tcp_welcome_mac(key, hello nonce, auth, this) */
} pb_tcp_welcome_t;

/* The rendezvous reply: where the exporter of a segment listens, read from
 * the segment's abstract unix socket on the exporter's node. */
typedef struct {
    pb_tcp_msg_hdr_t hdr;
    uint32_t addr; /* IPv4, network order: the exporter's address for other nodes */
    uint16_t port; /* host order */
    uint16_t reserved;
} pb_tcp_directory_t;

/* The MACs of the handshake: SipHash-2-4 under the job key @key of a label
 * and every field of the AUTH but its MAC (with the exporter's @hello_nonce);
 * and of a label, both nonces, the AUTH's MAC (so everything it covers)
 * and every field of the WELCOME but its MAC. */
uint64_t pb_tcp_auth_mac(const uint8_t key[PB_TCP_KEY_LEN],
                         const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth);
uint64_t pb_tcp_welcome_mac(const uint8_t key[PB_TCP_KEY_LEN],
                            const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth,
                            const pb_tcp_welcome_t *welcome);

/* The exporter's check of an AUTH that arrived whole on a connection whose
 * local end is @local and remote end @remote (getsockname, getpeername),
 * against its job id @job_id and key: the header, the job id, the
 * addresses and ports the importer saw, and the MAC.
 * @return NULL if it authenticates, else the reason (for the exporter's
 * log only: the importer is told nothing). */
const char *pb_tcp_auth_check(const pb_tcp_auth_t *auth, const uint8_t key[PB_TCP_KEY_LEN],
                              const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const char *job_id,
                              uint32_t local_addr, uint16_t local_port, uint32_t remote_addr,
                              uint16_t remote_port);

/* The importer's check of a WELCOME answering @auth: the header and the
 * MAC, no unknown flag and the reserved field 0, the exporter's node when
 * @expected_node is not UINT32_MAX, and the payload MACs on if @auth
 * asked for them.  @return NULL if it authenticates (the importer is
 * admitted), else the reason. */
const char *pb_tcp_welcome_check(const pb_tcp_welcome_t *welcome, const uint8_t key[PB_TCP_KEY_LEN],
                                 const uint8_t hello_nonce[PB_TCP_NONCE_LEN],
                                 const pb_tcp_auth_t *auth, uint32_t expected_node);

/* ---- session keys and frame MACs ------------------------------------------------ */

/* What authenticates the frames of one direction of a connection. */
typedef struct {
    uint8_t header_key[PB_TCP_KEY_LEN];  /* the header MACs' key */
    uint8_t payload_key[PB_TCP_KEY_LEN]; /* the payload MACs' key */
    uint64_t seq;                        /* the next frame's sequence number */
    int payload_mac;                     /* payloads are followed by their MAC */
} pb_tcp_seal_t;

/* The session keys of a connection whose handshake was @auth, answering
 * @hello_nonce, under the job key @key: SipHash-2-4 as a pseudo-random
 * function of a label (one per key and half) and the transcript (both
 * nonces and the AUTH's MAC, which covers the addresses, the node and the
 * job).  @to_exporter and @to_importer start at sequence number 0; each
 * MACs payloads when @payload_mac. */
void pb_tcp_session_derive(const uint8_t key[PB_TCP_KEY_LEN],
                           const uint8_t hello_nonce[PB_TCP_NONCE_LEN], const pb_tcp_auth_t *auth,
                           int payload_mac, pb_tcp_seal_t *to_exporter, pb_tcp_seal_t *to_importer);

/* The MAC of header bytes @header[0 .. PB_TCP_FRAME_MAC_OFFSET) as frame
 * number @seq under @key. */
uint64_t pb_tcp_header_mac(const uint8_t key[PB_TCP_KEY_LEN], uint64_t seq,
                           const uint8_t header[PB_TCP_FRAME_HEADER_SIZE]);

/* Whether @hdr is ours, of this version and of @type. */
int pb_tcp_msg_hdr_ok(const pb_tcp_msg_hdr_t *hdr, uint16_t type);

/* Fill @hdr as a message of @type: the magic and this version (little
 * endian, as pb_tcp_msg_hdr_ok reads them). */
void pb_tcp_msg_hdr_set(pb_tcp_msg_hdr_t *hdr, uint16_t type);

/* ---- frames ----------------------------------------------------------------- */

typedef enum {
    /* importer -> exporter */
    PB_TCP_ATTACH = 1,  /* tag; payload pb_tcp_attach_t; answered by REPLY */
    PB_TCP_DETACH = 2,  /* slot */
    PB_TCP_PUT = 3,     /* slot, offset, flags (SIGNAL); payload = the data */
    PB_TCP_GET = 4,     /* tag, slot, offset, count (at most PB_TCP_MAX_GET); answered by REPLY */
    PB_TCP_BARRIER = 5, /* tag, slot; answered once every earlier frame is applied */
    PB_TCP_SIGNAL = 6,  /* slot, flags (PB_TCP_FLAG_ACCUMULATE) */
    /* exporter -> importer */
    PB_TCP_REPLY = 7,     /* tag, status, slot, offset (ATTACH: size), count (ATTACH: perm) */
    PB_TCP_EVENT = 8,     /* slot: the exporter posted a signal */
    PB_TCP_WITHDRAWN = 9, /* slot: the segment was unpublished or destroyed */
    /* importer -> any process of a node: where does this segment's exporter
     * listen?  tag; payload pb_tcp_lookup_t; the REPLY carries a
     * pb_tcp_location_t.  For nodes in other network namespaces or hosts,
     * whose rendezvous sockets the importer cannot see. */
    PB_TCP_LOOKUP = 10,
    /* importer -> exporter: run the segment's call handler on the payload
     * (at most PB_TCP_MAX_CALL bytes).  slot, tag, count (the most reply
     * bytes the importer takes, at most PB_TCP_MAX_CALL); answered by a
     * REPLY carrying the handler's reply.  With flag NO_REPLY: no tag, no
     * count, no REPLY (an error is kept for the next BARRIER). */
    PB_TCP_CALL = 11,
    PB_TCP_FRAME_TYPES
} pb_tcp_frame_type_t;

#define PB_TCP_FLAG_ACCUMULATE 1u /* SIGNAL: count every post */
#define PB_TCP_FLAG_SIGNAL 2u     /* PUT: then signal the exporter, accumulating */
/* PUT: the payload's first 4 bytes land after the rest, with release order
 * (a word a reader polls); 4 to PB_TCP_WORD_LAST_MAX bytes at an offset
 * that is a multiple of 4 */
#define PB_TCP_FLAG_WORD_LAST 4u
#define PB_TCP_WORD_LAST_MAX 4096
#define PB_TCP_FLAG_NO_REPLY 8u /* CALL: not answered */
/* LOOKUP: a segment of the ofi transport (its exporter's rendezvous over
 * TCP, read from its node's ofi rendezvous socket; docs/ofi.md) */
#define PB_TCP_FLAG_OFI 16u

typedef struct {
    uint16_t type;
    uint16_t flags;
    int32_t status; /* REPLY: a pb_status_t; 0 in every other frame */
    uint32_t slot;  /* the exporter's number for one import on this connection */
    uint32_t tag;   /* the importer's number for a request awaiting a REPLY */
    uint64_t offset;
    uint32_t length; /* payload bytes after the header */
    uint32_t count;  /* GET: bytes asked for; CALL: the most reply bytes taken */
} pb_tcp_frame_t;

typedef struct {
    uint32_t segid;
    uint32_t perm; /* RSM_PERM_* asked for */
} pb_tcp_attach_t;

typedef struct {
    uint32_t node;
    uint32_t segid;
} pb_tcp_lookup_t;

typedef struct {
    uint32_t addr; /* IPv4, network order */
    uint16_t port; /* host order */
    uint16_t reserved;
} pb_tcp_location_t;

/* Encode @frame into @out (PB_TCP_FRAME_HEADER_SIZE bytes, the MAC left
 * zero), and back (the MAC is not looked at). */
void pb_tcp_frame_encode(const pb_tcp_frame_t *frame, uint8_t out[PB_TCP_FRAME_HEADER_SIZE]);
void pb_tcp_frame_decode(const uint8_t in[PB_TCP_FRAME_HEADER_SIZE], pb_tcp_frame_t *frame);

/* Seal the encoded header @header as the next frame of @seal: write its
 * MAC and take a sequence number.  @return the sequence number taken (the
 * payload's MAC uses it). */
uint64_t pb_tcp_header_seal(pb_tcp_seal_t *seal, uint8_t header[PB_TCP_FRAME_HEADER_SIZE]);

/* Start the MAC of the payload of frame number @seq (pb_siphash_update
 * with the payload's bytes, pb_siphash_final gives the MAC, sent little
 * endian after the payload). */
void pb_tcp_payload_mac_init(pb_siphash_t *state, const pb_tcp_seal_t *seal, uint64_t seq);

/* The payload MAC of frame number @seq whose payload is @data[0..@len). */
uint64_t pb_tcp_payload_mac(const pb_tcp_seal_t *seal, uint64_t seq, const void *data, size_t len);

/* The checks that need no state, for a frame arriving at the exporter
 * (@at_exporter 1) or at the importer: known type for that direction, no
 * unknown flag, the fields a type does not use zero, the payload length
 * a type allows (a GET's count and a REPLY's length at most
 * PB_TCP_MAX_GET).  @return NULL, or the reason the frame is malformed. */
const char *pb_tcp_frame_check(const pb_tcp_frame_t *frame, int at_exporter);

/* The largest segment a tcp exporter exports (rsm_memseg_export_create
 * refuses larger ones), so the largest size an importer accepts. */
#define PB_TCP_MAX_SEGMENT_SIZE ((uint64_t)1 << 40)

/* The importer's check of the segment size an ATTACH reply announces: not
 * 0, not above PB_TCP_MAX_SEGMENT_SIZE.  @return NULL if acceptable, else
 * the reason. */
const char *pb_tcp_attach_size_check(uint64_t size);

/* What the exporter knows of one slot when a frame names it. */
typedef struct {
    char *base; /* segment memory */
    uint64_t size;
    uint32_t perm; /* RSM_PERM_* granted */
} pb_tcp_slot_view_t;

/* The exporter's check of a PUT, GET or CALL against its slot: permission
 * (a CALL needs write permission), and for a PUT or GET [offset, offset +
 * bytes) inside the segment without overflow.
 * @return NULL if allowed, else the reason. */
const char *pb_tcp_frame_check_access(const pb_tcp_frame_t *frame, const pb_tcp_slot_view_t *slot);

/* The importer's check of the data a REPLY @frame carries, for a request
 * of @request_type whose buffer has room for @room bytes (0: it has none):
 * a CALL's reply brings at most @room bytes, any other's none or exactly
 * @room; a reply with an error none.  @return NULL if acceptable, else the
 * reason. */
const char *pb_tcp_reply_check(const pb_tcp_frame_t *frame, uint16_t request_type, size_t room);

/* ---- the exporter's handling of frames (pure) --------------------------------- */

/* Where the exporter side receives the payloads that are not segment data. */
typedef struct {
    pb_tcp_attach_t attach; /* payload of the ATTACH being received */
    pb_tcp_lookup_t lookup; /* payload of the LOOKUP being received */
    char *word_last;        /* of a word-last PUT (PB_TCP_WORD_LAST_MAX); malloc'd on first use */
    /* a CALL's request, and its handler's reply: grown to the longest yet */
    char *call;
    size_t call_cap;
    char *reply;
    size_t reply_cap;
    int call_dropped; /* no memory for the CALL being received: it is answered so */
} pb_tcp_export_rx_t;

/* The exporter's header callback, but for its state: where the payload of
 * @frame goes (*@dest_p; left NULL: dropped).  @slot is what the exporter
 * knows of the slot @frame names: NULL when none is attached (ATTACH and
 * LOOKUP name none); slot->base NULL once the segment is withdrawn (a
 * put's data is dropped).  ATTACH and LOOKUP payloads go to @rx, a
 * word-last put's to rx->word_last, any other put's into the segment.
 * @return NULL, or why the connection must close. */
const char *pb_tcp_export_header(pb_tcp_export_rx_t *rx, const pb_tcp_frame_t *frame,
                                 const pb_tcp_slot_view_t *slot, char **dest_p);

/* Run @handler (@arg its first argument; NULL: none set) on the CALL
 * @frame, whose request is whole in rx->call (as pb_tcp_export_header
 * placed it), for the segment [@base, @base + @size).  Its reply is left in
 * rx->reply and its length in *@reply_len_p: what the handler said,
 * clamped to the frame's count (*@said_p: what it said).
 * @return PB_OK; PB_ERR_PERMISSION when @handler is NULL; PB_ERR_NO_MEMORY
 * when there was no room for the request or the reply (the handler did not
 * run). */
pb_status_t pb_tcp_export_call(pb_tcp_export_rx_t *rx, const pb_tcp_frame_t *frame, char *base,
                               uint64_t size, pb_rsm_call_handler_t handler, void *arg,
                               uint32_t *reply_len_p, size_t *said_p);

/* Free what @rx allocated. */
void pb_tcp_export_rx_free(pb_tcp_export_rx_t *rx);

/* Store the word-last PUT @frame, received whole in rx->word_last (as
 * pb_tcp_export_header placed it), into the segment at @base: the rest
 * first, then the first word with release order. */
void pb_tcp_export_word_last(const pb_tcp_export_rx_t *rx, const pb_tcp_frame_t *frame, char *base);

/* ---- receive state machine -------------------------------------------------- */

/* Called when a header has arrived, its MAC checked, and passed pb_tcp_frame_check: set
 * *dest_p to where its payload goes (NULL: read and drop it; the buffer
 * must hold frame->length bytes).  Return NULL, or a reason that closes the
 * connection. */
typedef const char *(*pb_tcp_rx_header_cb_t)(void *ctx, const pb_tcp_frame_t *frame, char **dest_p);
/* Called when a frame's payload has arrived in full. */
typedef void (*pb_tcp_rx_frame_cb_t)(void *ctx, const pb_tcp_frame_t *frame);

typedef struct {
    uint8_t header[PB_TCP_FRAME_HEADER_SIZE];
    size_t header_got;
    pb_tcp_frame_t frame; /* the frame whose payload is arriving */
    char *dest;           /* where the payload goes; NULL: dropped */
    size_t payload_got;
    int in_payload;
    int at_exporter;
    pb_tcp_seal_t seal;       /* what authenticates the frames arriving */
    uint64_t frame_seq;       /* the sequence number of the frame arriving */
    pb_siphash_t payload_mac; /* of its payload so far (seal.payload_mac) */
    uint8_t trailer[PB_TCP_PAYLOAD_MAC_SIZE];
    size_t trailer_got; /* payload MAC bytes in; in_payload stays 1 */
    pb_tcp_rx_header_cb_t on_header;
    pb_tcp_rx_frame_cb_t on_frame;
    void *ctx;
} pb_tcp_rx_t;

/* Start a machine for frames authenticated by @seal (its sequence number
 * is the next frame's). */
void pb_tcp_rx_init(pb_tcp_rx_t *rx, int at_exporter, const pb_tcp_seal_t *seal,
                    pb_tcp_rx_header_cb_t on_header, pb_tcp_rx_frame_cb_t on_frame, void *ctx);

/* Where the next bytes of the stream should be read to, and how many at
 * most: into the header, into the payload's destination, into @scratch
 * (of @scratch_len bytes) when the payload is dropped, or into the
 * payload's MAC. */
void pb_tcp_rx_next(const pb_tcp_rx_t *rx, char *scratch, size_t scratch_len, char **buf_p,
                    size_t *len_p);

/* Account for @len bytes just read (for where pb_tcp_rx_next said; @data
 * is where they are: the same place, or where they were left when a
 * dropped payload is not copied), running the callbacks as headers and
 * frames complete.  A header is acted on only once its MAC is right; a
 * frame is complete only once its payload's MAC is (when the connection
 * has them: the payload is in place before).  @return NULL, or the reason
 * the connection must close (a MAC that is wrong, a malformed frame, one
 * refused by a callback); the machine is then unusable. */
const char *pb_tcp_rx_advance(pb_tcp_rx_t *rx, const void *data, size_t len);

/* Whether the machine is between frames (used when redirecting a payload). */
static inline int pb_tcp_rx_idle(const pb_tcp_rx_t *rx)
{
    return !rx->in_payload && rx->header_got == 0;
}

/* The segment memory of the put @rx (the exporter's) is receiving was
 * moved to @base (a rebind) or withdrawn (NULL): a put received into the
 * segment goes on into the new memory, and the part already received is
 * copied there too, so that it lands there whole (into the old memory as
 * well, which the caller may still read); a withdrawn segment's rest is
 * dropped.  A word-last put is received aside whole and stored when it is
 * (pb_tcp_export_word_last, into the memory of that time): it is left as
 * it is.  Nothing happens unless @rx is in the payload of a PUT. */
void pb_tcp_export_redirect(pb_tcp_rx_t *rx, char *base);

#endif
