/*
 * libFuzzer target for the PMI wire parsers (src/boot/pmi.c).
 *
 * Every input is parsed as a v1 line and as a v2 body.  Beyond "no crash,
 * no out-of-bounds access" (AddressSanitizer), a message that parses and
 * formats again must parse back to the same pairs: the serializer's
 * escaping and the parser agree.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/pmi.h"

typedef pb_status_t (*parse_func_t)(const char *text, size_t len, pb_boot_pmi_msg_t *msg);
typedef pb_status_t (*format_func_t)(const pb_boot_pmi_msg_t *msg, char *buf, size_t cap,
                                     size_t *len_p);

static void check_same_pairs(const pb_boot_pmi_msg_t *a, const pb_boot_pmi_msg_t *b)
{
    if (a->count != b->count)
        abort();
    for (int i = 0; i < a->count; i++) {
        if (strcmp(a->pairs[i].key, b->pairs[i].key) != 0 ||
            strcmp(a->pairs[i].value, b->pairs[i].value) != 0)
            abort();
    }
}

/* parse, and if that works, format and parse again (skipping @header bytes
 * of the formatted text: v2's length field) */
static void round_trip(const char *text, size_t len, parse_func_t parse, format_func_t format,
                       size_t header)
{
    static pb_boot_pmi_msg_t msg, again;
    char buf[PB_BOOT_PMI_MSG_MAX + 16];
    size_t out_len;

    if (parse(text, len, &msg) != PB_OK)
        return;
    if (format(&msg, buf, sizeof(buf), &out_len) != PB_OK)
        return;
    if (out_len < header || parse(buf + header, out_len - header, &again) != PB_OK)
        abort();
    check_same_pairs(&msg, &again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    round_trip((const char *)data, size, pb_boot_pmi_parse_v1, pb_boot_pmi_format_v1, 0);
    round_trip((const char *)data, size, pb_boot_pmi_parse_v2, pb_boot_pmi_format_v2, 6);
    return 0;
}
