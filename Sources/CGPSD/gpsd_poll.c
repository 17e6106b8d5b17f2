/* gpsd's reports (TPV, SKY and the answer to ?POLL), read without libgps: libgps 3.22 does not unpack POLL and
 * loops forever on some reports, valid JSON included. Pure functions of their input, strict about the JSON they
 * accept, so that they can be fed anything. */
#define _GNU_SOURCE
#include "gpsd_shim.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_DEPTH = 16,        /* objects and arrays nested deeper than this are refused */
    MAX_ENTRIES = 16,      /* TPV or SKY entries in one answer (gpsd serves at most a few devices) */
    MAX_NUMBER_LENGTH = 40 /* gpsd writes at most some 20 characters a number */
};

typedef struct {
    const unsigned char *at;
    const unsigned char *end;
    int depth;
} cursor;

/* A stretch of the input: a string's contents between its quotes. */
typedef struct {
    const unsigned char *start;
    size_t length;
    int escaped; /* it holds a backslash escape, so its bytes are not its value */
} span;

typedef struct {
    wb_gps_fix fix;
    span device;
    int has_device;
    int has_time;
} tpv_entry;

typedef struct {
    double hdop, vdop, pdop;
    span device;
    int has_device;
} sky_entry;

typedef struct {
    tpv_entry tpv[MAX_ENTRIES];
    int tpv_count;
    sky_entry sky[MAX_ENTRIES];
    int sky_count;
} poll_answer;

/* ---- Lexical level ---- */

static void skip_space(cursor *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r')) c->at++;
}

static int take(cursor *c, unsigned char expected) {
    skip_space(c);
    if (c->at >= c->end || *c->at != expected) return 0;
    c->at++;
    return 1;
}

static int hex_value(unsigned char byte) {
    if (byte >= '0' && byte <= '9') return byte - '0';
    if (byte >= 'a' && byte <= 'f') return byte - 'a' + 10;
    if (byte >= 'A' && byte <= 'F') return byte - 'A' + 10;
    return -1;
}

/* Four hex digits of a \u escape. */
static int read_hex4(cursor *c, unsigned *value) {
    if (c->end - c->at < 4) return 0;
    unsigned result = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_value(c->at[i]);
        if (digit < 0) return 0;
        result = result * 16 + (unsigned)digit;
    }
    c->at += 4;
    *value = result;
    return 1;
}

/* The rest of a \u escape, after the "\u": a UTF-16 unit, surrogates only in well-formed pairs. */
static int read_unicode_escape(cursor *c) {
    unsigned unit;
    if (!read_hex4(c, &unit)) return 0;
    if (unit >= 0xDC00 && unit <= 0xDFFF) return 0;
    if (unit < 0xD800 || unit > 0xDBFF) return 1;
    unsigned low;
    if (c->end - c->at < 2 || c->at[0] != '\\' || c->at[1] != 'u') return 0;
    c->at += 2;
    return read_hex4(c, &low) && low >= 0xDC00 && low <= 0xDFFF;
}

/* One UTF-8 sequence of two to four bytes, starting at a lead byte >= 0x80: shortest form, no surrogates, at most
 * U+10FFFF. */
static int read_utf8(cursor *c) {
    unsigned char lead = *c->at;
    int continuation;
    unsigned char low = 0x80, high = 0xBF; /* range of the first continuation byte */
    if (lead >= 0xC2 && lead <= 0xDF) {
        continuation = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        continuation = 2;
        if (lead == 0xE0) low = 0xA0;
        if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        continuation = 3;
        if (lead == 0xF0) low = 0x90;
        if (lead == 0xF4) high = 0x8F;
    } else {
        return 0;
    }
    if (c->end - c->at <= continuation) return 0;
    if (c->at[1] < low || c->at[1] > high) return 0;
    for (int i = 2; i <= continuation; i++) {
        if (c->at[i] < 0x80 || c->at[i] > 0xBF) return 0;
    }
    c->at += continuation + 1;
    return 1;
}

/* A string: well-formed UTF-8, no raw control characters, only JSON's escapes. */
static int read_string(cursor *c, span *out) {
    if (!take(c, '"')) return 0;
    span result = {c->at, 0, 0};
    while (c->at < c->end) {
        unsigned char byte = *c->at;
        if (byte == '"') {
            result.length = (size_t)(c->at - result.start);
            c->at++;
            if (out != NULL) *out = result;
            return 1;
        }
        if (byte < 0x20) return 0;
        if (byte == '\\') {
            result.escaped = 1;
            c->at++;
            if (c->at >= c->end) return 0;
            unsigned char escape = *c->at++;
            if (escape == 'u') {
                if (!read_unicode_escape(c)) return 0;
            } else if (strchr("\"\\/bfnrt", escape) == NULL || escape == '\0') {
                return 0;
            }
        } else if (byte >= 0x80) {
            if (!read_utf8(c)) return 0;
        } else {
            c->at++;
        }
    }
    return 0;
}

static int span_is(span s, const char *text) {
    size_t length = strlen(text);
    return !s.escaped && s.length == length && memcmp(s.start, text, length) == 0;
}

static int spans_equal(span a, span b) {
    return !a.escaped && !b.escaped && a.length == b.length && memcmp(a.start, b.start, a.length) == 0;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) { c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

/* A number in JSON's grammar, finite as a double; converted in the C locale whatever the process's is. */
static int read_number(cursor *c, double *value) {
    skip_space(c);
    const unsigned char *start = c->at, *p = c->at;
    if (p < c->end && *p == '-') p++;
    if (p >= c->end) return 0;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < c->end && *p >= '0' && *p <= '9') p++;
    } else {
        return 0;
    }
    if (p < c->end && *p == '.') {
        p++;
        if (p >= c->end || *p < '0' || *p > '9') return 0;
        while (p < c->end && *p >= '0' && *p <= '9') p++;
    }
    if (p < c->end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < c->end && (*p == '+' || *p == '-')) p++;
        if (p >= c->end || *p < '0' || *p > '9') return 0;
        while (p < c->end && *p >= '0' && *p <= '9') p++;
    }
    size_t length = (size_t)(p - start);
    if (length > MAX_NUMBER_LENGTH) return 0;
    (void)pthread_once(&c_locale_once, make_c_locale);
    if (c_locale == (locale_t)0) return 0;
    char text[MAX_NUMBER_LENGTH + 1];
    memcpy(text, start, length);
    text[length] = '\0';
    char *stop;
    double result = strtod_l(text, &stop, c_locale);
    if (stop != text + length || !isfinite(result)) return 0;
    c->at = p;
    *value = result;
    return 1;
}

static int read_literal(cursor *c, const char *word) {
    skip_space(c);
    size_t length = strlen(word);
    if ((size_t)(c->end - c->at) < length || memcmp(c->at, word, length) != 0) return 0;
    c->at += length;
    return 1;
}

/* true or false. */
static int read_boolean(cursor *c, int *value) {
    skip_space(c);
    if (c->at < c->end && *c->at == 't') {
        *value = 1;
        return read_literal(c, "true");
    }
    *value = 0;
    return read_literal(c, "false");
}

/* ---- Structure ---- */

static int skip_value(cursor *c);

static int enter(cursor *c, unsigned char open) {
    if (c->depth >= MAX_DEPTH || !take(c, open)) return 0;
    c->depth++;
    return 1;
}

/* Reads an object member by member: `member` is called with each name and must consume the value; returns 0 to
 * refuse the input. */
typedef int (*member_reader)(cursor *c, span name, void *context);

static int read_object(cursor *c, member_reader member, void *context) {
    if (!enter(c, '{')) return 0;
    if (!take(c, '}')) {
        do {
            span name;
            if (!read_string(c, &name) || !take(c, ':')) return 0;
            if (name.escaped) return 0; /* gpsd's member names are plain ASCII */
            if (!member(c, name, context)) return 0;
        } while (take(c, ','));
        if (!take(c, '}')) return 0;
    }
    c->depth--;
    return 1;
}

/* Reads an array element by element, each through `element`. */
typedef int (*element_reader)(cursor *c, void *context);

static int read_array(cursor *c, element_reader element, void *context) {
    if (!enter(c, '[')) return 0;
    if (!take(c, ']')) {
        do {
            if (!element(c, context)) return 0;
        } while (take(c, ','));
        if (!take(c, ']')) return 0;
    }
    c->depth--;
    return 1;
}

static int skip_member(cursor *c, span name, void *context) {
    (void)name;
    (void)context;
    return skip_value(c);
}

static int skip_element(cursor *c, void *context) {
    (void)context;
    return skip_value(c);
}

/* Any value, checked and passed over. */
static int skip_value(cursor *c) {
    double ignored;
    skip_space(c);
    if (c->at >= c->end) return 0;
    switch (*c->at) {
    case '{': return read_object(c, skip_member, NULL);
    case '[': return read_array(c, skip_element, NULL);
    case '"': return read_string(c, NULL);
    case 't': return read_literal(c, "true");
    case 'f': return read_literal(c, "false");
    case 'n': return read_literal(c, "null");
    default: return read_number(c, &ignored);
    }
}

/* Marks member `index` as seen; a member given twice is refused. */
static int first_time(unsigned *seen, int index) {
    unsigned bit = 1u << index;
    if (*seen & bit) return 0;
    *seen |= bit;
    return 1;
}

/* ---- Time ---- */

static int digits(const unsigned char *p, int count, int *value) {
    int result = 0;
    for (int i = 0; i < count; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        result = result * 10 + (p[i] - '0');
    }
    *value = result;
    return 1;
}

/* Days from 1970-01-01 to the given proleptic Gregorian date. */
static int64_t days_from_civil(int year, int month, int day) {
    int64_t y = month <= 2 ? year - 1 : year;
    int64_t era = y / 400;
    int64_t year_of_era = y - era * 400;
    int64_t day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

/* gpsd's time: "YYYY-MM-DDTHH:MM:SS[.fraction]Z", UTC, the fraction at most 9 digits; 1970 to 9999. */
static int parse_time(span text, int64_t *seconds, int64_t *nanoseconds) {
    if (text.escaped || text.length < 20) return 0;
    const unsigned char *p = text.start;
    int year, month, day, hour, minute, second;
    if (!digits(p, 4, &year) || p[4] != '-' || !digits(p + 5, 2, &month) || p[7] != '-' || !digits(p + 8, 2, &day)
        || p[10] != 'T' || !digits(p + 11, 2, &hour) || p[13] != ':' || !digits(p + 14, 2, &minute) || p[16] != ':'
        || !digits(p + 17, 2, &second))
        return 0;
    static const int month_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1970 || month < 1 || month > 12 || day < 1 || day > month_days[month - 1]
        || (month == 2 && day == 29 && !leap) || hour > 23 || minute > 59 || second > 60)
        return 0;
    size_t at = 19;
    int64_t fraction = 0;
    if (p[at] == '.') {
        at++;
        int count = 0;
        while (at < text.length && p[at] >= '0' && p[at] <= '9') {
            if (++count > 9) return 0;
            fraction = fraction * 10 + (p[at] - '0');
            at++;
        }
        if (count == 0) return 0;
        for (; count < 9; count++) fraction *= 10;
    }
    if (at + 1 != text.length || p[at] != 'Z') return 0;
    *seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
    *nanoseconds = fraction;
    return 1;
}

/* ---- TPV and SKY entries ---- */

/* The numeric TPV members kept, in the order of tpv_number_slot. */
static const char *const tpv_number_names[] = {
    "lat", "lon", "altMSL", "altHAE", "eph", "epx", "epy", "epv", "speed", "eps", "track", "epd", "climb", "epc",
};
enum { TPV_NUMBER_COUNT = sizeof tpv_number_names / sizeof tpv_number_names[0] };

/* Where the numeric member `index` of tpv_number_names goes in a fix. */
static double *tpv_number_slot(wb_gps_fix *fix, int index) {
    double *const slots[TPV_NUMBER_COUNT] = {
        &fix->latitude, &fix->longitude, &fix->altitude_msl, &fix->altitude_hae, &fix->eph,   &fix->epx,
        &fix->epy,      &fix->epv,       &fix->speed,        &fix->eps,          &fix->track, &fix->epd,
        &fix->climb,    &fix->epc,
    };
    return slots[index];
}

enum { TPV_CLASS = TPV_NUMBER_COUNT, TPV_DEVICE, TPV_MODE, TPV_TIME, TPV_STATUS };

typedef struct {
    tpv_entry *entry;
    unsigned seen;
} tpv_reading;

static int read_tpv_member(cursor *c, span name, void *context) {
    tpv_reading *reading = context;
    tpv_entry *entry = reading->entry;
    for (int i = 0; i < TPV_NUMBER_COUNT; i++) {
        if (!span_is(name, tpv_number_names[i])) continue;
        return first_time(&reading->seen, i) && read_number(c, tpv_number_slot(&entry->fix, i));
    }
    if (span_is(name, "class")) {
        span value;
        return first_time(&reading->seen, TPV_CLASS) && read_string(c, &value) && span_is(value, "TPV");
    }
    if (span_is(name, "device")) {
        entry->has_device = 1;
        return first_time(&reading->seen, TPV_DEVICE) && read_string(c, &entry->device);
    }
    if (span_is(name, "mode")) {
        double mode;
        if (!first_time(&reading->seen, TPV_MODE) || !read_number(c, &mode)) return 0;
        if (mode != 0 && mode != 1 && mode != 2 && mode != 3) return 0;
        entry->fix.mode = (int)mode;
        return 1;
    }
    if (span_is(name, "status")) {
        double status;
        if (!first_time(&reading->seen, TPV_STATUS) || !read_number(c, &status)) return 0;
        if (status < 0 || status > 15 || status != floor(status)) return 0;
        entry->fix.status = (int)status;
        return 1;
    }
    if (span_is(name, "time")) {
        span value;
        if (!first_time(&reading->seen, TPV_TIME) || !read_string(c, &value)) return 0;
        if (!parse_time(value, &entry->fix.time_seconds, &entry->fix.time_nanoseconds)) return 0;
        entry->has_time = 1;
        return 1;
    }
    return skip_value(c);
}

static int read_tpv(cursor *c, void *context) {
    poll_answer *answer = context;
    if (answer->tpv_count >= MAX_ENTRIES) return 0;
    tpv_entry *entry = &answer->tpv[answer->tpv_count++];
    memset(entry, 0, sizeof *entry);
    for (int i = 0; i < TPV_NUMBER_COUNT; i++) *tpv_number_slot(&entry->fix, i) = NAN;
    entry->fix.hdop = NAN;
    entry->fix.vdop = NAN;
    tpv_reading reading = {entry, 0};
    if (!read_object(c, read_tpv_member, &reading)) return 0;
    return (reading.seen & (1u << TPV_CLASS)) != 0;
}

enum { SKY_CLASS, SKY_DEVICE, SKY_HDOP, SKY_VDOP, SKY_PDOP, SKY_SATELLITES };

typedef struct {
    sky_entry *entry;
    unsigned seen;
    wb_gps_sky *satellites; /* where a report's satellites go; NULL in a POLL answer, which skips them */
} sky_reading;

enum { SAT_PRN, SAT_GNSSID, SAT_SVID, SAT_EL, SAT_AZ, SAT_SS, SAT_USED };

typedef struct {
    wb_gps_satellite *satellite;
    unsigned seen;
} satellite_reading;

/* A number within [low, high]. */
static int read_within(cursor *c, double low, double high, double *value) {
    return read_number(c, value) && *value >= low && *value <= high;
}

/* A whole number within [0, 1000]. */
static int read_id(cursor *c, int *id) {
    double value;
    if (!read_within(c, 0, 1000, &value) || value != floor(value)) return 0;
    *id = (int)value;
    return 1;
}

static int read_satellite_member(cursor *c, span name, void *context) {
    satellite_reading *reading = context;
    wb_gps_satellite *satellite = reading->satellite;
    if (span_is(name, "PRN")) return first_time(&reading->seen, SAT_PRN) && read_id(c, &satellite->prn);
    if (span_is(name, "gnssid")) return first_time(&reading->seen, SAT_GNSSID) && read_id(c, &satellite->gnssid);
    if (span_is(name, "svid")) return first_time(&reading->seen, SAT_SVID) && read_id(c, &satellite->svid);
    if (span_is(name, "el")) return first_time(&reading->seen, SAT_EL) && read_within(c, -90, 90, &satellite->elevation);
    if (span_is(name, "az")) return first_time(&reading->seen, SAT_AZ) && read_within(c, 0, 360, &satellite->azimuth);
    if (span_is(name, "ss")) return first_time(&reading->seen, SAT_SS) && read_within(c, 0, 99, &satellite->signal);
    if (span_is(name, "used")) return first_time(&reading->seen, SAT_USED) && read_boolean(c, &satellite->used);
    return skip_value(c);
}

static int read_satellite(cursor *c, void *context) {
    wb_gps_sky *sky = context;
    if (sky->count >= WB_GPS_MAX_SATELLITES) return 0;
    wb_gps_satellite *satellite = &sky->satellites[sky->count++];
    *satellite = (wb_gps_satellite){-1, -1, -1, NAN, NAN, NAN, 0};
    satellite_reading reading = {satellite, 0};
    if (!read_object(c, read_satellite_member, &reading)) return 0;
    int has_prn = (reading.seen & (1u << SAT_PRN)) != 0;
    int has_ids = (reading.seen & (1u << SAT_GNSSID)) != 0 && (reading.seen & (1u << SAT_SVID)) != 0;
    return has_prn || has_ids;
}

static int read_sky_member(cursor *c, span name, void *context) {
    sky_reading *reading = context;
    sky_entry *entry = reading->entry;
    if (span_is(name, "class")) {
        span value;
        return first_time(&reading->seen, SKY_CLASS) && read_string(c, &value) && span_is(value, "SKY");
    }
    if (span_is(name, "device")) {
        entry->has_device = 1;
        return first_time(&reading->seen, SKY_DEVICE) && read_string(c, &entry->device);
    }
    if (span_is(name, "hdop")) return first_time(&reading->seen, SKY_HDOP) && read_number(c, &entry->hdop);
    if (span_is(name, "vdop")) return first_time(&reading->seen, SKY_VDOP) && read_number(c, &entry->vdop);
    if (span_is(name, "pdop")) return first_time(&reading->seen, SKY_PDOP) && read_number(c, &entry->pdop);
    if (span_is(name, "satellites") && reading->satellites != NULL) {
        reading->satellites->count = 0;
        return first_time(&reading->seen, SKY_SATELLITES) && read_array(c, read_satellite, reading->satellites);
    }
    return skip_value(c);
}

/* One SKY object into the answer's next entry, its satellites into `satellites` unless that is NULL. */
static int read_sky_into(cursor *c, poll_answer *answer, wb_gps_sky *satellites, int *has_satellites) {
    if (answer->sky_count >= MAX_ENTRIES) return 0;
    sky_entry *entry = &answer->sky[answer->sky_count++];
    memset(entry, 0, sizeof *entry);
    entry->hdop = NAN;
    entry->vdop = NAN;
    entry->pdop = NAN;
    sky_reading reading = {entry, 0, satellites};
    if (!read_object(c, read_sky_member, &reading)) return 0;
    if (has_satellites != NULL) *has_satellites = (reading.seen & (1u << SKY_SATELLITES)) != 0;
    return (reading.seen & (1u << SKY_CLASS)) != 0;
}

static int read_sky(cursor *c, void *context) { return read_sky_into(c, context, NULL, NULL); }

/* ---- The POLL object ---- */

enum { POLL_CLASS, POLL_TIME, POLL_ACTIVE, POLL_TPV, POLL_SKY };

typedef struct {
    poll_answer *answer;
    unsigned seen;
} poll_reading;

static int read_poll_member(cursor *c, span name, void *context) {
    poll_reading *reading = context;
    if (span_is(name, "class")) {
        span value;
        return first_time(&reading->seen, POLL_CLASS) && read_string(c, &value) && span_is(value, "POLL");
    }
    if (span_is(name, "time")) {
        span value;
        int64_t seconds, nanoseconds;
        return first_time(&reading->seen, POLL_TIME) && read_string(c, &value)
               && parse_time(value, &seconds, &nanoseconds);
    }
    if (span_is(name, "active")) {
        double active;
        return first_time(&reading->seen, POLL_ACTIVE) && read_number(c, &active) && active >= 0
               && active == floor(active);
    }
    if (span_is(name, "tpv")) {
        return first_time(&reading->seen, POLL_TPV) && read_array(c, read_tpv, reading->answer);
    }
    if (span_is(name, "sky")) {
        return first_time(&reading->seen, POLL_SKY) && read_array(c, read_sky, reading->answer);
    }
    return skip_value(c);
}

static int usable(const tpv_entry *entry) {
    return entry->fix.mode >= 2 && entry->has_time && isfinite(entry->fix.latitude) && isfinite(entry->fix.longitude);
}

static int later(const wb_gps_fix *a, const wb_gps_fix *b) {
    return a->time_seconds > b->time_seconds
           || (a->time_seconds == b->time_seconds && a->time_nanoseconds > b->time_nanoseconds);
}

int wb_parse_report(const char *json, size_t len, wb_gps_dop *dop, wb_gps_fix *out) {
    int result = wb_parse_report_sky(json, len, dop, NULL, out);
    return result == 2 ? 0 : result;
}

int wb_parse_report_sky(const char *json, size_t len, wb_gps_dop *dop, wb_gps_sky *sky, wb_gps_fix *out) {
    if (json == NULL || dop == NULL || out == NULL) return -1;
    const unsigned char *start = (const unsigned char *)json;
    poll_answer answer;
    answer.tpv_count = 0;
    answer.sky_count = 0;
    cursor c = {start, start + len, 0};
    if (read_tpv(&c, &answer)) {
        skip_space(&c);
        if (c.at != c.end) return -1;
        const tpv_entry *entry = &answer.tpv[0];
        if (!usable(entry)) return 0;
        *out = entry->fix;
        if (out->mode < 3) {
            out->altitude_msl = NAN;
            out->altitude_hae = NAN;
        }
        out->hdop = dop->hdop;
        out->vdop = dop->vdop;
        return 1;
    }
    /* The satellites are read into a copy, so that a refused report leaves *sky as it was. */
    wb_gps_sky scratch;
    scratch.count = 0;
    int has_satellites = 0;
    c = (cursor){start, start + len, 0};
    if (read_sky_into(&c, &answer, sky != NULL ? &scratch : NULL, &has_satellites)) {
        skip_space(&c);
        if (c.at != c.end) return -1;
        dop->hdop = answer.sky[0].hdop;
        dop->vdop = answer.sky[0].vdop;
        if (sky == NULL) return 0;
        scratch.pdop = answer.sky[0].pdop;
        scratch.has_satellites = has_satellites;
        if (!has_satellites) scratch.count = 0;
        *sky = scratch;
        return 2;
    }
    return wb_parse_poll(json, len, out);
}

int wb_parse_poll(const char *json, size_t len, wb_gps_fix *out) {
    if (json == NULL || out == NULL) return -1;
    poll_answer answer;
    answer.tpv_count = 0;
    answer.sky_count = 0;
    cursor c = {(const unsigned char *)json, (const unsigned char *)json + len, 0};
    poll_reading reading = {&answer, 0};
    if (!read_object(&c, read_poll_member, &reading)) return -1;
    skip_space(&c);
    if (c.at != c.end) return -1;
    if ((reading.seen & (1u << POLL_CLASS)) == 0 || (reading.seen & (1u << POLL_TPV)) == 0) return -1;
    const tpv_entry *best = NULL;
    for (int i = 0; i < answer.tpv_count; i++) {
        const tpv_entry *entry = &answer.tpv[i];
        if (usable(entry) && (best == NULL || later(&entry->fix, &best->fix))) best = entry;
    }
    if (best == NULL) return 0;
    *out = best->fix;
    if (out->mode < 3) {
        out->altitude_msl = NAN;
        out->altitude_hae = NAN;
    }
    for (int i = 0; i < answer.sky_count; i++) {
        const sky_entry *sky = &answer.sky[i];
        if (sky->has_device == best->has_device && (!sky->has_device || spans_equal(sky->device, best->device))) {
            out->hdop = sky->hdop;
            out->vdop = sky->vdop;
            break;
        }
    }
    return 1;
}
