// The netCDF data model of a virtual file (see header.hpp). The order of the checks in each call
// is PnetCDF's (dispatcher first, then the ncmpio driver), as established by the oracle test.
#include "model/header.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <utility>

#include "common/bytes.hpp"
#include "common/error.hpp"
#include "model/attr.hpp"
#include "model/netcdf4_mark.h"
#include "types/convert.hpp"

namespace dtf::model {

// ---------------------------------------------------------------------------------------------
// Names

namespace {

NameNormalizer g_normalizer = nullptr;

bool is_ascii(const std::string &s) {
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Normalized form of a name that passed check_name(); false when the normalizer rejects it.
bool normalize(const char *name, std::string *out) {
    *out = name;
    if (g_normalizer == nullptr || is_ascii(*out)) return true;
    std::string normalized;
    if (!g_normalizer(*out, &normalized)) return false;
    *out = std::move(normalized);
    return true;
}

// Length of the well-formed UTF-8 sequence at p (a non-ASCII lead byte), 0 when malformed
// (overlong forms, surrogates and code points above U+10FFFF are malformed).
int utf8_length(const unsigned char *p) {
    auto cont = [](unsigned char c) { return (c & 0xC0) == 0x80; };
    const unsigned char c = p[0];
    if (c < 0xC2 || c > 0xF4) return 0;
    if (c < 0xE0) return cont(p[1]) ? 2 : 0;
    if (c < 0xF0) {
        if (!cont(p[1]) || !cont(p[2])) return 0;
        if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) return 0;
        return 3;
    }
    if (!cont(p[1]) || !cont(p[2]) || !cont(p[3])) return 0;
    if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) return 0;
    return 4;
}

bool valid_utf8(const unsigned char *p) {
    while (*p != 0) {
        const int n = *p < 0x80 ? 1 : utf8_length(p);
        if (n == 0) return false;
        p += n;
    }
    return true;
}

bool is_alnum_or_underscore(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

} // namespace

void set_name_normalizer(NameNormalizer normalizer) { g_normalizer = normalizer; }

// netCDF's NC_check_name, as PnetCDF has it: the length limit is tested while scanning, so a bad
// character within the first NC_MAX_NAME bytes wins over the length.
int check_name(const char *name) {
    if (name == nullptr || *name == 0 || std::strchr(name, '/') != nullptr) return NC_EBADNAME;
    const auto *start = reinterpret_cast<const unsigned char *>(name);
    if (!valid_utf8(start)) return NC_EBADNAME;
    const unsigned char *p = start;
    if (*p < 0x80 && !is_alnum_or_underscore(*p)) return NC_EBADNAME;
    p += *p < 0x80 ? 1 : utf8_length(p);
    unsigned char last = *start;
    while (*p != 0) {
        last = *p;
        if (*p < 0x80 && (*p < ' ' || *p > 0x7E)) return NC_EBADNAME;
        p += *p < 0x80 ? 1 : utf8_length(p);
        if (p - start > NC_MAX_NAME) return NC_EMAXNAME;
    }
    if (last < 0x80 && (last == ' ' || (last >= '\t' && last <= '\r'))) return NC_EBADNAME;
    return NC_NOERR;
}

// check_name, then normalize (names being defined).
static int checked_name(const char *name, std::string *out) {
    if (int err = check_name(name)) return err;
    return normalize(name, out) ? NC_NOERR : NC_EBADNAME;
}

// Names being looked up: NC_EBADNAME when null, empty or not UTF-8 (PnetCDF fails to normalize
// them); any other name is looked up as it is (normalized), even one that could not be defined.
static int lookup_name(const char *name, std::string *out) {
    if (name == nullptr || *name == 0) return NC_EBADNAME;
    if (!valid_utf8(reinterpret_cast<const unsigned char *>(name))) return NC_EBADNAME;
    return normalize(name, out) ? NC_NOERR : NC_EBADNAME;
}

// ---------------------------------------------------------------------------------------------
// Formats

int format_from_cmode(int cmode, int default_format, int *format) {
    if ((cmode & NC_64BIT_OFFSET) && (cmode & NC_64BIT_DATA)) return NC_EINVAL_CMODE;
    if (cmode & NC_NETCDF4) return NC_ENOTBUILT;
    int f = default_format;
    if (cmode & NC_64BIT_DATA)
        f = NC_FORMAT_CDF5;
    else if (cmode & NC_64BIT_OFFSET)
        f = NC_FORMAT_CDF2;
    else if (cmode & NC_CLASSIC_MODEL)
        f = NC_FORMAT_CLASSIC;
    if (f == NC_FORMAT_NETCDF4 || f == NC_FORMAT_NETCDF4_CLASSIC) return NC_ENOTBUILT;
    if (f != NC_FORMAT_CDF2 && f != NC_FORMAT_CDF5) f = NC_FORMAT_CLASSIC;
    if (format != nullptr) *format = f;
    return NC_NOERR;
}

namespace {

constexpr bool big_endian_host() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return true;
#else
    return false;
#endif
}

bool valid_format(int f) {
    return f == NC_FORMAT_CLASSIC || f == NC_FORMAT_CDF2 || f == NC_FORMAT_CDF5;
}

// Largest dimension length (and, for CDF-1/CDF-2, largest variable size in bytes: netCDF's
// vlen_max) of a format; "- 3" leaves room for rounding sizes up to a multiple of 4.
int64_t max_dim_len(int format) {
    switch (format) {
    case NC_FORMAT_CDF5: return std::numeric_limits<int64_t>::max();
    case NC_FORMAT_CDF2: return int64_t(NC_MAX_UINT) - 3;
    default: return int64_t(NC_MAX_INT) - 3;
    }
}

// Size of an attribute's values in the file header (padded to 4 bytes); PnetCDF lets a data-mode
// put_att replace an attribute only if this does not grow.
int64_t padded_size(nc_type type, int64_t len) { return (len * type_size(type) + 3) / 4 * 4; }

int att_index(const std::vector<Att> &atts, const std::string &name) {
    for (size_t i = 0; i < atts.size(); ++i)
        if (atts[i].name == name) return static_cast<int>(i);
    return -1;
}

void copy_name(const std::string &name, char *out) {
    if (out != nullptr) std::memcpy(out, name.c_str(), name.size() + 1);
}

} // namespace

Header::Header(int format) : format_(valid_format(format) ? format : NC_FORMAT_CLASSIC) { changed(); }

const Header::Defs Header::kNoDefs;

Header::Defs &Header::mut() {
    if (defs_.use_count() != 1) defs_ = std::make_shared<Defs>(d());
    return const_cast<Defs &>(*defs_); // (made non-const, by make_shared<Defs>)
}

void Header::changed() {
    static std::atomic<uint64_t> last{0}; // (unique in the process: headers are made on several threads)
    revision_ = ++last;
}

// ---------------------------------------------------------------------------------------------
// File state

namespace {

constexpr int64_t kHeaderAlign = 512; // PnetCDF's default alignment of the header extent

// Offsets and sizes wrap around like PnetCDF's (a CDF-5 file can describe more than 2^63 bytes:
// PnetCDF then reports negative offsets); unsigned arithmetic makes that well-defined here.
int64_t wrap_add(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t round4(int64_t n) { return wrap_add(n, 3) & ~int64_t(3); }

} // namespace

int Header::enddef(int64_t h_minfree, int64_t v_align, int64_t v_minfree, int64_t r_align) {
    changed();
    if (!define_mode_) return NC_ENOTINDEFINE; // also for read-only files (not NC_EPERM)
    if (h_minfree < 0 || v_align < 0 || v_minfree < 0 || r_align < 0) return NC_EINVAL;
    if (int err = check_vlens()) return err;
    // The alignments, once (as PnetCDF: the first enddef of a create or open settles them): the hints,
    // else the header's follows _enddef's v_align (or r_align when there are fixed-size variables),
    // else 512; the variables' and the record section's 4, or r_align; all rounded up to 4.
    if (align_.header == 0) {
        int64_t fixed = 0;
        for (size_t v = 0; v < d().vars.size(); ++v)
            if (!is_record_var(static_cast<int>(v))) fixed = wrap_add(fixed, var_len(static_cast<int>(v)));
        align_.header = hints_.header              ? hints_.header
                        : v_align > 0              ? v_align
                        : fixed > 0 && r_align > 0 ? r_align
                                                   : kHeaderAlign;
        align_.var = hints_.var;
        align_.record = hints_.record ? hints_.record : r_align;
        for (int64_t *a : {&align_.header, &align_.var, &align_.record}) *a = *a == 0 ? 4 : round4(*a);
    }
    Layout layout;
    if (int err = compute_layout(has_old_ ? &old_layout_ : nullptr, h_minfree, v_minfree, &layout)) return err;
    layout_ = std::move(layout);
    define_mode_ = false;
    return NC_NOERR;
}

void Header::set_alignment_hints(int64_t header, int64_t var, int64_t record) {
    changed();
    hints_ = Alignment{std::max<int64_t>(header, 0), std::max<int64_t>(var, 0), std::max<int64_t>(record, 0)};
}

int Header::redef() {
    if (read_only_) return NC_EPERM;
    if (define_mode_) return NC_EINDEFINE;
    define_mode_ = true;
    old_nvars_ = static_cast<int>(d().vars.size());
    old_layout_ = layout_;
    has_old_ = true;
    indep_mode_ = false;
    return NC_NOERR;
}

int Header::begin_indep_data() {
    if (define_mode_) return NC_EINDEFINE;
    indep_mode_ = true;
    return NC_NOERR;
}

int Header::end_indep_data() {
    if (define_mode_) return NC_EINDEFINE;
    indep_mode_ = false; // no error when already collective
    return NC_NOERR;
}

// ---------------------------------------------------------------------------------------------
// File layout: the CDF header and where PnetCDF puts each variable (CDF-1/CDF-2/CDF-5 spec).

namespace {

// NON_NEG counts and lengths are 8 bytes in CDF-5, 4 bytes before.
int64_t count_size(int format) { return format == NC_FORMAT_CDF5 ? 8 : 4; }

int64_t name_size(const std::string &name, int format) {
    return count_size(format) + round4(static_cast<int64_t>(name.size()));
}

int64_t atts_size(const std::vector<Att> &atts, int format) {
    int64_t n = 4 + count_size(format); // tag (or ABSENT) and count
    for (const Att &a : atts)
        n += name_size(a.name, format) + 4 + count_size(format) + padded_size(a.type, a.len);
    return n;
}

} // namespace

// The size of one variable (one record of a record variable) in the file, rounded up to 4 bytes.
int64_t Header::var_len(int varid) const {
    const Var &v = d().vars[varid];
    int64_t n = type_size(v.type);
    for (size_t i = is_record_var(varid) ? 1 : 0; i < v.dimids.size(); ++i)
        n *= d().dims[v.dimids[i]].len;
    return round4(n);
}

int64_t Header::header_size() const {
    const int64_t cs = count_size(format_);
    int64_t n = 4 + cs + 4 + cs; // magic, numrecs, dimension list tag and count
    for (const Dim &d : d().dims) n += name_size(d.name, format_) + cs;
    n += atts_size(d().gatts, format_) + 4 + cs;
    for (const Var &v : d().vars) {
        n += name_size(v.name, format_) + cs + cs * static_cast<int64_t>(v.dimids.size());
        n += atts_size(v.atts, format_) + 4 + cs + (format_ == NC_FORMAT_CLASSIC ? 4 : 8);
    }
    return n;
}

// PnetCDF's layout (NC_begins): the header extent after h_minfree bytes of free space, aligned
// (none without variables); each fixed-size variable aligned; the record section after v_minfree free
// bytes, aligned to the variables' and then to the record alignment; the record variables one after
// the other in it. On a redefinition nothing moves down from where `old` had it. CDF-1 offsets are
// 32-bit signed.
int Header::compute_layout(const Layout *old, int64_t h_minfree, int64_t v_minfree, Layout *out) const {
    auto rndup = [](int64_t x, int64_t a) { return static_cast<int64_t>((static_cast<uint64_t>(x) + a - 1) / a * a); };
    out->begin.assign(d().vars.size(), 0);
    int64_t end = d().vars.empty() ? header_size() : rndup(wrap_add(header_size(), h_minfree), align_.header);
    if (old) end = std::max(end, old->extent);
    // Each pass moves along the old layout's variables of its kind (their begins never move down).
    std::vector<int64_t> old_fixed, old_record;
    for (size_t i = 0; old && i < old->begin.size() && i < d().vars.size(); ++i)
        (is_record_var(static_cast<int>(i)) ? old_record : old_fixed).push_back(old->begin[i]);
    int first_fixed = -1;
    size_t j = 0;
    for (size_t i = 0; i < d().vars.size(); ++i) {
        const int id = static_cast<int>(i);
        if (is_record_var(id)) continue;
        if (format_ == NC_FORMAT_CLASSIC && end > NC_MAX_INT) return NC_EVARSIZE;
        out->begin[i] = rndup(end, align_.var);
        if (j < old_fixed.size()) out->begin[i] = std::max(out->begin[i], old_fixed[j++]);
        if (first_fixed < 0) first_fixed = id;
        end = wrap_add(out->begin[i], var_len(id));
    }
    int64_t rec = old ? old->begin_rec : 0;
    if (rec < end || rec != rndup(rec, align_.var)) rec = rndup(end, align_.var);
    if (rec < wrap_add(end, v_minfree)) rec = rndup(wrap_add(end, v_minfree), align_.var);
    if (align_.record > 1) rec = rndup(rec, align_.record);
    if (old) rec = std::max(rec, old->begin_rec);
    out->begin_rec = rec;
    out->extent = first_fixed >= 0 ? out->begin[static_cast<size_t>(first_fixed)] : rec;
    end = rec;
    j = 0;
    int nrec = 0, last = -1;
    out->recsize = 0;
    for (size_t i = 0; i < d().vars.size(); ++i) {
        const int id = static_cast<int>(i);
        if (!is_record_var(id)) continue;
        if (format_ == NC_FORMAT_CLASSIC && end > NC_MAX_INT) return NC_EVARSIZE;
        out->begin[i] = end;
        if (j < old_record.size()) out->begin[i] = std::max(out->begin[i], old_record[j++]);
        end = wrap_add(out->begin[i], var_len(id));
        out->recsize = wrap_add(out->recsize, var_len(id));
        ++nrec;
        last = id;
    }
    if (nrec == 1) { // a single record variable is not padded
        const Var &v = d().vars[last];
        out->recsize = type_size(v.type);
        for (size_t i = 1; i < v.dimids.size(); ++i) out->recsize *= d().dims[v.dimids[i]].len;
    }
    return NC_NOERR;
}

int Header::inq_layout(int64_t *header_size, int64_t *header_extent, int64_t *recsize) const {
    // (the header size is current: renames in data mode change it)
    if (header_size != nullptr) *header_size = this->header_size();
    if (header_extent != nullptr) *header_extent = layout_.extent;
    if (recsize != nullptr) *recsize = layout_.recsize;
    return NC_NOERR;
}

int Header::inq_varoffset(int varid, int64_t *offset) const {
    if (varid < 0 || varid >= static_cast<int>(layout_.begin.size())) return NC_ENOTVAR;
    if (offset != nullptr) *offset = layout_.begin[varid];
    return NC_NOERR;
}

int64_t Header::file_size() const {
    int64_t fixed_end = layout_.extent, records = -1;
    for (size_t i = 0; i < layout_.begin.size() && i < d().vars.size(); ++i) {
        const int id = static_cast<int>(i);
        if (is_record_var(id))
            records = records < 0 ? layout_.begin[i] : std::min(records, layout_.begin[i]);
        else
            fixed_end = std::max(fixed_end, layout_.begin[i] + var_len(id));
    }
    return records < 0 ? fixed_end : records + numrecs_ * layout_.recsize;
}

std::vector<char> Header::file_header() const {
    std::vector<char> out;
    out.reserve(static_cast<size_t>(header_size()));
    const bool cdf5 = format_ == NC_FORMAT_CDF5;
    auto be = [&](uint64_t v, int bytes) {
        for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
    };
    auto count = [&](uint64_t v) { be(v, cdf5 ? 8 : 4); };
    auto pad = [&] { out.resize((out.size() + 3) & ~size_t(3), '\0'); };
    auto name = [&](const std::string &n) {
        count(n.size());
        out.insert(out.end(), n.begin(), n.end());
        pad();
    };
    auto atts = [&](const std::vector<Att> &list) {
        be(list.empty() ? 0 : 0x0C, 4); // NC_ATTRIBUTE, or ABSENT
        count(list.size());
        for (const Att &a : list) {
            name(a.name);
            be(static_cast<uint32_t>(a.type), 4);
            count(static_cast<uint64_t>(a.len));
            const size_t size = static_cast<size_t>(type_size(a.type));
            for (size_t i = 0; i + size <= a.bytes.size(); i += size) // (native order -> big-endian)
                for (size_t b = size; b-- > 0;) out.push_back(a.bytes[i + b]);
            pad();
        }
    };
    const char magic[4] = {'C', 'D', 'F', static_cast<char>(cdf5 ? 5 : format_ == NC_FORMAT_CDF2 ? 2 : 1)};
    out.insert(out.end(), magic, magic + 4);
    count(static_cast<uint64_t>(numrecs_));
    be(d().dims.empty() ? 0 : 0x0A, 4); // NC_DIMENSION, or ABSENT
    count(d().dims.size());
    for (const Dim &d : d().dims) {
        name(d.name);
        count(static_cast<uint64_t>(d.len));
    }
    atts(d().gatts);
    be(d().vars.empty() ? 0 : 0x0B, 4); // NC_VARIABLE, or ABSENT
    count(d().vars.size());
    for (size_t i = 0; i < d().vars.size(); ++i) {
        const Var &v = d().vars[i];
        name(v.name);
        count(v.dimids.size());
        for (int id : v.dimids) count(static_cast<uint64_t>(id));
        atts(v.atts);
        be(static_cast<uint32_t>(v.type), 4);
        const uint64_t vsize = static_cast<uint64_t>(var_len(static_cast<int>(i)));
        count(cdf5 || vsize <= NC_MAX_UINT - 3 ? vsize : NC_MAX_UINT); // (too large for 32 bits: 2^32 - 1)
        const int64_t begin = i < layout_.begin.size() ? layout_.begin[i] : 0;
        be(static_cast<uint64_t>(begin), format_ == NC_FORMAT_CLASSIC ? 4 : 8);
    }
    return out;
}

// netCDF's NC_check_vlens: in CDF-1/CDF-2 a variable (one record of a record variable) may
// exceed the format's size limit only if it is the last fixed-size variable and there are no
// record variables, or if it is the last record variable.
int Header::check_vlens() const {
    if (format_ == NC_FORMAT_CDF5) return NC_NOERR;
    const int64_t vlen_max = max_dim_len(format_);
    auto too_large = [&](int varid) {
        const Var &v = d().vars[varid];
        int64_t prod = type_size(v.type);
        for (size_t i = is_record_var(varid) ? 1 : 0; i < v.dimids.size(); ++i) {
            const int64_t len = d().dims[v.dimids[i]].len;
            if (len == 0) continue;
            if (len > vlen_max / prod) return true;
            prod *= len;
        }
        return false;
    };
    // For the fixed-size (record == false) or the record variables: the number of too large
    // ones and whether the last one is.
    auto scan = [&](bool record, int *large, bool *last) {
        *large = 0;
        *last = false;
        for (int i = 0; i < static_cast<int>(d().vars.size()); ++i) {
            if (is_record_var(i) != record) continue;
            *last = too_large(i);
            *large += *last;
        }
    };
    int large, rec_large;
    bool last, rec_last;
    scan(false, &large, &last);
    scan(true, &rec_large, &rec_last);
    int nrec = 0;
    inq_num_rec_vars(&nrec);
    if (large > 1 || (large == 1 && (!last || nrec > 0))) return NC_EVARSIZE;
    if (rec_large > 1 || (rec_large == 1 && !rec_last)) return NC_EVARSIZE;
    return NC_NOERR;
}

// ---------------------------------------------------------------------------------------------
// Dimensions and variables

int Header::find_dim(const std::string &name) const {
    for (size_t i = 0; i < d().dims.size(); ++i)
        if (d().dims[i].name == name) return static_cast<int>(i);
    return -1;
}

int Header::find_var(const std::string &name) const {
    const auto it = d().var_ids.find(name);
    return it == d().var_ids.end() ? -1 : it->second;
}

int Header::unlimdimid() const {
    for (size_t i = 0; i < d().dims.size(); ++i)
        if (d().dims[i].len == NC_UNLIMITED) return static_cast<int>(i);
    return -1;
}

bool Header::is_record_var(int varid) const {
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return false;
    const Var &v = d().vars[varid];
    return !v.dimids.empty() && d().dims[v.dimids[0]].len == NC_UNLIMITED;
}

std::vector<int64_t> Header::shape(int varid) const {
    std::vector<int64_t> s;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return s;
    s.resize(d().vars[varid].dimids.size());
    for (size_t i = 0; i < s.size(); ++i) s[i] = shape_len(varid, i);
    return s;
}

int Header::check_def_dim(const std::string &name, int64_t len) const {
    if (len < 0 || len > max_dim_len(format_)) return NC_EDIMSIZE;
    if (len == NC_UNLIMITED && unlimdimid() >= 0) return NC_EUNLIMIT;
    return find_dim(name) >= 0 ? NC_ENAMEINUSE : NC_NOERR;
}

int Header::def_dim(const char *name, int64_t len, int *idp) {
    changed();
    if (!define_mode_) return NC_ENOTINDEFINE; // (a read-only file is never in define mode)
    std::string n;
    if (int err = checked_name(name, &n)) return err;
    if (int err = check_def_dim(n, len)) return err;
    mut().dims.push_back({std::move(n), len});
    if (idp != nullptr) *idp = static_cast<int>(d().dims.size()) - 1;
    return NC_NOERR;
}

int Header::check_def_var(nc_type type, int ndims, const int *dimids) const {
    if (ndims > 0 && dimids == nullptr) return NC_EINVAL;
    for (int i = 0; i < ndims; ++i)
        if (dimids[i] < 0 || dimids[i] >= static_cast<int>(d().dims.size())) return NC_EBADDIM;
    for (int i = 1; i < ndims; ++i)
        if (d().dims[dimids[i]].len == NC_UNLIMITED) return NC_EUNLIMPOS;
    // The size in bytes (of one record) must fit in 64 bits.
    int64_t size = type_size(type);
    for (int i = 0; i < ndims; ++i) {
        const int64_t len = d().dims[dimids[i]].len;
        if (len == NC_UNLIMITED) continue;
        if (size > std::numeric_limits<int64_t>::max() / len) return NC_EVARSIZE;
        size *= len;
    }
    return NC_NOERR;
}

int Header::def_var(const char *name, nc_type type, int ndims, const int *dimids, int *varidp) {
    changed();
    if (!define_mode_) return NC_ENOTINDEFINE;
    std::string n;
    if (int err = checked_name(name, &n)) return err;
    if (!is_valid_type(type)) return NC_EBADTYPE;
    if (format_ != NC_FORMAT_CDF5 && is_cdf5_type(type)) return NC_ESTRICTCDF2;
    if (ndims < 0) return NC_EINVAL;
    if (find_var(n) >= 0) return NC_ENAMEINUSE;
    if (int err = check_def_var(type, ndims, dimids)) return err;
    Var v;
    v.name = std::move(n);
    v.type = type;
    v.dimids.assign(dimids, dimids + ndims);
    v.no_fill = fill_mode_ == NC_NOFILL;
    mut().var_ids.emplace(v.name, static_cast<int>(mut().vars.size()));
    mut().vars.push_back(std::move(v));
    if (varidp != nullptr) *varidp = static_cast<int>(d().vars.size()) - 1;
    return NC_NOERR;
}

int Header::rename_dim(int dimid, const char *newname) {
    changed();
    if (read_only_) return NC_EPERM;
    std::string n;
    if (int err = checked_name(newname, &n)) return err;
    if (dimid < 0 || dimid >= static_cast<int>(d().dims.size())) return NC_EBADDIM;
    const int other = find_dim(n);
    if (other >= 0 && other != dimid) return NC_ENAMEINUSE; // (its own name is fine, unlike vars)
    if (!define_mode_ && n.size() > d().dims[dimid].name.size()) return NC_ENOTINDEFINE;
    mut().dims[dimid].name = std::move(n);
    return NC_NOERR;
}

int Header::rename_var(int varid, const char *newname) {
    changed();
    if (read_only_) return NC_EPERM;
    if (varid == NC_GLOBAL) return NC_EGLOBAL;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return NC_ENOTVAR;
    std::string n;
    if (int err = checked_name(newname, &n)) return err;
    if (find_var(n) >= 0) return NC_ENAMEINUSE;
    if (!define_mode_ && n.size() > d().vars[varid].name.size()) return NC_ENOTINDEFINE;
    mut().var_ids.erase(mut().vars[varid].name);
    mut().var_ids.emplace(n, varid);
    mut().vars[varid].name = std::move(n);
    return NC_NOERR;
}

// ---------------------------------------------------------------------------------------------
// Attributes

std::vector<Att> *Header::atts_of(int varid) {
    if (!static_cast<const Header *>(this)->atts_of(varid)) return nullptr;
    return varid == NC_GLOBAL ? &mut().gatts : &mut().vars[static_cast<size_t>(varid)].atts;
}

const std::vector<Att> *Header::atts_of(int varid) const {
    if (varid == NC_GLOBAL) return &d().gatts;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return nullptr;
    return &d().vars[static_cast<size_t>(varid)].atts;
}

// The index of attribute `name` of variable `varid`: NC_ENOTVAR, NC_EBADNAME, NC_ENOTATT.
int Header::find_att(int varid, const char *name, int *index) const {
    const std::vector<Att> *atts = atts_of(varid);
    if (atts == nullptr) return NC_ENOTVAR;
    std::string n;
    if (int err = lookup_name(name, &n)) return err;
    *index = att_index(*atts, n);
    return *index < 0 ? NC_ENOTATT : NC_NOERR;
}

// In data mode an attribute may only replace an existing one whose header space suffices.
int Header::check_att_space(int varid, const std::string &name, nc_type type, int64_t len) const {
    if (define_mode_) return NC_NOERR;
    const std::vector<Att> &atts = *atts_of(varid);
    const int i = att_index(atts, name);
    if (i < 0 || padded_size(type, len) > padded_size(atts[i].type, atts[i].len))
        return NC_ENOTINDEFINE;
    return NC_NOERR;
}

int Header::check_put_att(int varid, const std::string &name, nc_type type, int64_t len,
                          const void *values, nc_type memtype) const {
    if (!is_valid_type(type)) return NC_EBADTYPE;
    if (format_ != NC_FORMAT_CDF5 && is_cdf5_type(type)) return NC_ESTRICTCDF2;
    if ((memtype == NC_CHAR) != (type == NC_CHAR)) return NC_ECHAR;
    if (len < 0 || (len > 0 && values == nullptr)) return NC_EINVAL;
    if (varid != NC_GLOBAL && name == _FillValue) {
        if (type != d().vars[varid].type) return NC_EBADTYPE;
        if (len != 1) return NC_EINVAL;
        if (define_mode_ && varid < old_nvars_) return NC_ELATEFILL;
    }
    return check_att_space(varid, name, type, len);
}

// Adds `a` to the attributes of `varid`, or replaces the one of the same name in place (it keeps
// its attribute number).
void Header::store_att(int varid, Att a) {
    changed();
    std::vector<Att> &atts = *atts_of(varid);
    const int i = att_index(atts, a.name);
    if (i >= 0)
        atts[i] = std::move(a);
    else
        atts.push_back(std::move(a));
}

int Header::put_att(int varid, const char *name, nc_type type, int64_t len, const void *values,
                    nc_type memtype) {
    if (read_only_) return NC_EPERM;
    if (atts_of(varid) == nullptr) return NC_ENOTVAR;
    std::string n;
    if (int err = checked_name(name, &n)) return err;
    if (memtype == NC_NAT) memtype = type;
    if (int err = check_put_att(varid, n, type, len, values, memtype)) return err;
    Att a;
    a.name = std::move(n);
    a.type = type;
    a.len = len;
    a.bytes.resize(static_cast<size_t>(len) * type_size(type));
    const int err = types::convert_put(values, memtype, a.bytes.data(), type, static_cast<size_t>(len), nullptr,
                                       format_);
    store_att(varid, std::move(a));
    return err;
}

int Header::del_att(int varid, const char *name) {
    changed();
    if (read_only_) return NC_EPERM;
    if (!define_mode_) return NC_ENOTINDEFINE;
    int i;
    if (int err = find_att(varid, name, &i)) return err;
    std::vector<Att> &atts = *atts_of(varid);
    atts.erase(atts.begin() + i);
    return NC_NOERR;
}

int Header::rename_att(int varid, const char *name, const char *newname) {
    changed();
    if (read_only_) return NC_EPERM;
    if (atts_of(varid) == nullptr) return NC_ENOTVAR;
    std::string from, to;
    if (int err = lookup_name(name, &from)) return err;
    if (int err = checked_name(newname, &to)) return err;
    std::vector<Att> &atts = *atts_of(varid);
    const int i = att_index(atts, from);
    if (i < 0) return NC_ENOTATT;
    if (att_index(atts, to) >= 0) return NC_ENAMEINUSE;
    if (!define_mode_ && to.size() > from.size()) return NC_ENOTINDEFINE;
    atts[i].name = std::move(to);
    return NC_NOERR;
}

// Unlike put_att, PnetCDF's copy_att checks neither the type against the output format nor the
// _FillValue rules: the attribute is copied as it is.
int Header::copy_att(int varid_in, const char *name, Header &out, int varid_out) const {
    if (out.read_only_) return NC_EPERM;
    if (atts_of(varid_in) == nullptr || out.atts_of(varid_out) == nullptr) return NC_ENOTVAR;
    int i;
    if (int err = find_att(varid_in, name, &i)) return err;
    Att a = (*atts_of(varid_in))[i]; // a copy: out may be *this
    if (int err = out.check_att_space(varid_out, a.name, a.type, a.len)) return err;
    out.store_att(varid_out, std::move(a));
    return NC_NOERR;
}

int Header::inq_att(int varid, const char *name, nc_type *type, int64_t *len) const {
    int i;
    if (int err = find_att(varid, name, &i)) return err;
    const Att &a = (*atts_of(varid))[i];
    if (type != nullptr) *type = a.type;
    if (len != nullptr) *len = a.len;
    return NC_NOERR;
}

int Header::inq_attid(int varid, const char *name, int *idp) const {
    int i;
    if (int err = find_att(varid, name, &i)) return err;
    if (idp != nullptr) *idp = i;
    return NC_NOERR;
}

int Header::inq_attname(int varid, int attnum, char *name) const {
    const std::vector<Att> *atts = atts_of(varid);
    if (atts == nullptr) return NC_ENOTVAR;
    if (attnum < 0 || attnum >= static_cast<int>(atts->size())) return NC_ENOTATT;
    if (name == nullptr) return NC_EINVAL;
    copy_name((*atts)[attnum].name, name);
    return NC_NOERR;
}

int Header::get_att(int varid, const char *name, void *out, nc_type memtype) const {
    int i;
    if (int err = find_att(varid, name, &i)) return err;
    const Att &a = (*atts_of(varid))[i];
    if (a.len == 0) return NC_NOERR; // no NC_ECHAR either
    if (memtype == NC_NAT) memtype = a.type;
    if ((memtype == NC_CHAR) != (a.type == NC_CHAR)) return NC_ECHAR;
    if (out == nullptr) return NC_EINVAL;
    return types::convert_get(a.bytes.data(), a.type, out, memtype, static_cast<size_t>(a.len), format_);
}

// ---------------------------------------------------------------------------------------------
// Fill

namespace {

// What PnetCDF's inq_var_fill makes of a _FillValue attribute: it takes the first bytes of the
// attribute's external (big-endian) form as one value of the variable's type. That is the value
// when the types agree; a _FillValue of another type can only come from copy_att or rename_att.
// (Beyond the attribute's header space PnetCDF reads whatever follows; zeros here.)
void fill_from_att(const Att &a, nc_type var_type, void *out) {
    const int asize = type_size(a.type), vsize = type_size(var_type);
    std::vector<unsigned char> ext(std::max<size_t>(a.bytes.size(), vsize), 0);
    for (size_t k = 0; k < a.bytes.size(); ++k) { // native -> big-endian, per attribute element
        const size_t in_elem = big_endian_host() ? k % asize : asize - 1 - k % asize;
        ext[k] = a.bytes[k / asize * asize + in_elem];
    }
    auto *dst = static_cast<unsigned char *>(out);
    for (int k = 0; k < vsize; ++k) dst[k] = ext[big_endian_host() ? k : vsize - 1 - k];
}

} // namespace

int Header::set_fill(int fillmode, int *old_modep, bool data_mode) {
    if (define_mode_) changed(); // (in data mode it changes no definition its readers take: a writer's own fills)
    if (read_only_) return NC_EPERM;
    if (!define_mode_ && !data_mode) return NC_ENOTINDEFINE;
    if (fillmode != NC_FILL && fillmode != NC_NOFILL) return NC_EINVAL;
    if (old_modep != nullptr) *old_modep = fill_mode_;
    fill_mode_ = fillmode;
    for (Var &v : mut().vars) v.no_fill = fillmode == NC_NOFILL; // overrides def_var_fill
    return NC_NOERR;
}

int Header::def_var_fill(int varid, int no_fill, const void *fill_value) {
    changed();
    if (!define_mode_) return NC_ENOTINDEFINE; // (a read-only file is never in define mode)
    if (varid == NC_GLOBAL) return NC_EGLOBAL;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return NC_ENOTVAR;
    Var &v = mut().vars[varid];
    v.no_fill = no_fill != 0;
    if (v.no_fill || fill_value == nullptr) return NC_NOERR;
    // As PnetCDF: the mode is set even when the value is refused (NC_ELATEFILL).
    return put_att(varid, _FillValue, v.type, 1, fill_value, v.type);
}

int Header::inq_var_fill(int varid, int *no_fill, void *fill_value) const {
    if (varid == NC_GLOBAL) return NC_EGLOBAL;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return NC_ENOTVAR;
    const Var &v = d().vars[varid];
    if (no_fill != nullptr) *no_fill = v.no_fill ? 1 : 0;
    if (fill_value == nullptr) return NC_NOERR;
    const int i = att_index(v.atts, _FillValue);
    if (i < 0) {
        default_fill(v.type, fill_value);
        return NC_NOERR;
    }
    fill_from_att(v.atts[i], v.type, fill_value);
    return NC_NOERR;
}

std::vector<Header::Region> Header::enddef_fills() const {
    std::vector<Region> fills;
    for (int v = old_nvars_; v < static_cast<int>(d().vars.size()); ++v) {
        if (d().vars[static_cast<size_t>(v)].no_fill) continue;
        const bool record = is_record_var(v);
        if (record && numrecs_ == 0) continue;
        Region f{v, std::vector<int64_t>(d().vars[static_cast<size_t>(v)].dimids.size(), 0), shape(v)};
        if (record) f.count[0] = numrecs_;
        if (std::find(f.count.begin(), f.count.end(), 0) == f.count.end()) fills.push_back(std::move(f));
    }
    return fills;
}

bool Header::fills_records() const {
    for (int v = old_nvars_; has_old_ && v < static_cast<int>(d().vars.size()); ++v)
        if (!d().vars[static_cast<size_t>(v)].no_fill && is_record_var(v)) return true;
    return false;
}

int Header::fill_rec(int varid, int64_t recno, Region *fill) {
    if (read_only_) return NC_EPERM;
    if (define_mode_) return NC_EINDEFINE;
    if (varid == NC_GLOBAL) return NC_EGLOBAL;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return NC_ENOTVAR;
    if (!is_record_var(varid)) return NC_ENOTRECVAR;
    if (indep_mode_) return NC_EINDEP;
    const Var &v = d().vars[static_cast<size_t>(varid)];
    if (v.no_fill && att_index(v.atts, _FillValue) < 0) return NC_ENOTFILL;
    if (recno < 0) return NC_EINVALCOORDS;
    numrecs_ = std::max(numrecs_, recno + 1);
    *fill = Region{varid, std::vector<int64_t>(v.dimids.size(), 0), shape(varid)};
    fill->start[0] = recno;
    fill->count[0] = 1;
    return NC_NOERR;
}

namespace {

// The elements first .. first + n - 1 (row-major) of an array of `shape`, as boxes in that order:
// each the largest block that starts at the next element (whole rows where they are whole).
void linear_boxes(int varid, const std::vector<int64_t> &prefix, const std::vector<int64_t> &shape, int64_t first,
                  int64_t n, std::vector<Header::Region> *out) {
    const size_t k = shape.size();
    std::vector<int64_t> per(k + 1, 1); // per[d]: elements per step of dimension d
    for (size_t d = k; d-- > 0;) per[d] = per[d + 1] * shape[d];
    while (n > 0) {
        std::vector<int64_t> idx(k);
        for (size_t d = 0; d < k; ++d) idx[d] = first / per[d + 1] % shape[d];
        // The outermost dimension d whose inner ones start at 0 here and fit whole: the box takes
        // as many steps of d as fit, the inner dimensions whole.
        size_t d = k == 0 ? 0 : k - 1;
        while (d > 0 && idx[d] == 0 && per[d] <= n) --d;
        Header::Region r{varid, prefix, std::vector<int64_t>(prefix.size(), 1)};
        int64_t c = 1;
        for (size_t j = 0; j < k; ++j) {
            int64_t count = j < d ? 1 : j == d ? std::min(n / per[d + 1], shape[d] - idx[d]) : shape[j];
            if (j == d) c = count;
            r.start.push_back(idx[j]);
            r.count.push_back(count);
        }
        out->push_back(std::move(r));
        const int64_t taken = k == 0 ? 1 : c * per[d + 1];
        first += taken;
        n -= taken;
    }
}

} // namespace

int Header::vard_regions(int varid, const std::vector<std::pair<int64_t, int64_t>> &runs, std::vector<Region> *out,
                         int64_t *numrecs) const {
    const nc_type type = d().vars[static_cast<size_t>(varid)].type;
    const int64_t es = type_size(type), base = layout_.begin[static_cast<size_t>(varid)];
    int64_t begin_rec = -1; // the first record variable's begin
    for (size_t v = 0; v < d().vars.size(); ++v)
        if (is_record_var(static_cast<int>(v)) && (begin_rec < 0 || layout_.begin[v] < begin_rec))
            begin_rec = layout_.begin[v];
    int64_t true_ub = 0;
    for (auto [offset, bytes] : runs) {
        true_ub = std::max(true_ub, offset + bytes);
        for (int64_t at = base + offset, end = at + bytes; at < end;) {
            // The variable (and record) holding byte `at`, the element there, and how far it goes on.
            int found = -1;
            int64_t rec = -1, start = 0, limit = 0; // element index in the variable (or record), bytes left there
            for (size_t v = 0; v < d().vars.size() && found < 0; ++v) {
                const int id = static_cast<int>(v);
                int64_t slab = es;
                for (size_t i = is_record_var(id) ? 1 : 0; i < d().vars[v].dimids.size(); ++i)
                    slab *= d().dims[static_cast<size_t>(d().vars[v].dimids[i])].len;
                int64_t from = layout_.begin[v], r = -1;
                if (is_record_var(id)) {
                    if (at < begin_rec || layout_.recsize <= 0) continue;
                    r = (at - begin_rec) / layout_.recsize;
                    from += r * layout_.recsize;
                }
                if (at < from || at >= from + slab || d().vars[v].type != type) continue;
                if ((at - from) % es != 0) return NC_EINVAL;
                found = id, rec = r, start = (at - from) / es, limit = from + slab - at;
            }
            if (found < 0) return NC_EINVAL;
            const int64_t take = std::min(limit, end - at);
            if (take % es != 0) return NC_EINVAL;
            std::vector<int64_t> shape = this->shape(found);
            std::vector<int64_t> prefix;
            if (rec >= 0) {
                shape.erase(shape.begin());
                prefix.push_back(rec);
            }
            linear_boxes(found, prefix, shape, start, take / es, out);
            at += take;
        }
    }
    *numrecs = numrecs_;
    if (is_record_var(varid) && layout_.recsize > 0)
        *numrecs = std::max(numrecs_, (true_ub + layout_.recsize - 1) / layout_.recsize);
    return NC_NOERR;
}

// ---------------------------------------------------------------------------------------------
// Inquiries

int Header::inq(int *ndims, int *nvars, int *ngatts, int *unlimdimidp) const {
    if (ndims != nullptr) *ndims = static_cast<int>(d().dims.size());
    if (nvars != nullptr) *nvars = static_cast<int>(d().vars.size());
    if (ngatts != nullptr) *ngatts = static_cast<int>(d().gatts.size());
    if (unlimdimidp != nullptr) *unlimdimidp = unlimdimid();
    return NC_NOERR;
}

int Header::inq_format(int *format) const {
    if (format != nullptr) *format = format_;
    return NC_NOERR;
}

int Header::inq_num_rec_vars(int *nvars) const {
    int n = 0;
    for (size_t i = 0; i < d().vars.size(); ++i) n += is_record_var(static_cast<int>(i));
    if (nvars != nullptr) *nvars = n;
    return NC_NOERR;
}

int Header::inq_num_fix_vars(int *nvars) const {
    int rec = 0;
    inq_num_rec_vars(&rec);
    if (nvars != nullptr) *nvars = static_cast<int>(d().vars.size()) - rec;
    return NC_NOERR;
}

int Header::inq_dim(int dimid, char *name, int64_t *len) const {
    if (dimid < 0 || dimid >= static_cast<int>(d().dims.size())) return NC_EBADDIM;
    copy_name(d().dims[dimid].name, name);
    if (len != nullptr) *len = d().dims[dimid].len == NC_UNLIMITED ? numrecs_ : d().dims[dimid].len;
    return NC_NOERR;
}

int Header::inq_dimid(const char *name, int *idp) const {
    std::string n;
    if (int err = lookup_name(name, &n)) return err;
    const int i = find_dim(n);
    if (i < 0) return NC_EBADDIM;
    if (idp != nullptr) *idp = i;
    return NC_NOERR;
}

int Header::inq_var(int varid, char *name, nc_type *type, int *ndims, int *dimids,
                    int *natts) const {
    if (varid == NC_GLOBAL) return NC_EGLOBAL;
    if (varid < 0 || varid >= static_cast<int>(d().vars.size())) return NC_ENOTVAR;
    const Var &v = d().vars[varid];
    copy_name(v.name, name);
    if (type != nullptr) *type = v.type;
    if (ndims != nullptr) *ndims = static_cast<int>(v.dimids.size());
    if (dimids != nullptr) std::copy(v.dimids.begin(), v.dimids.end(), dimids);
    if (natts != nullptr) *natts = static_cast<int>(v.atts.size());
    return NC_NOERR;
}

int Header::inq_varnatts(int varid, int *natts) const {
    const std::vector<Att> *atts = atts_of(varid);
    if (atts == nullptr) return NC_ENOTVAR;
    if (natts != nullptr) *natts = static_cast<int>(atts->size());
    return NC_NOERR;
}

int Header::inq_varid(const char *name, int *varidp) const {
    std::string n;
    if (int err = lookup_name(name, &n)) return err;
    const int i = find_var(n);
    if (i < 0) return NC_ENOTVAR;
    if (varidp != nullptr) *varidp = i;
    return NC_NOERR;
}

// ---------------------------------------------------------------------------------------------
// Data access

int Header::check_access(const Access &a) const {
    if (a.is_write && read_only_) return NC_EPERM;
    if (!a.nonblocking) {
        if (define_mode_) return NC_EINDEFINE;
        if (a.collective && indep_mode_) return NC_EINDEP;
        if (!a.collective && !indep_mode_) return NC_ENOTINDEP;
    }
    if (a.varid == NC_GLOBAL) return NC_EGLOBAL;
    if (a.varid < 0 || a.varid >= static_cast<int>(d().vars.size())) return NC_ENOTVAR;
    const nc_type type = d().vars[a.varid].type;
    if (a.memtype != NC_NAT && (a.memtype == NC_CHAR) != (type == NC_CHAR)) return NC_ECHAR;
    if (a.api == Api::var || d().vars[a.varid].dimids.empty()) return NC_NOERR;
    if (a.start == nullptr) return NC_EINVALCOORDS; // (not NC_ENULLSTART)
    if (a.api != Api::var1 && a.count == nullptr) return NC_EEDGE; // (not NC_ENULLCOUNT)
    return check_start_count(a);
}

// PnetCDF's check_start_count_stride, built with RELAX_COORD_BOUND: a start equal to the
// dimension length is allowed when nothing is accessed along it. The record dimension bounds
// reads (numrecs) but not writes.
int Header::check_start_count(const Access &a) const {
    const size_t nd = d().vars[a.varid].dimids.size();
    auto len = [&](size_t i) {
        return i == 0 && is_record_var(a.varid) ? std::max(shape_len(a.varid, 0), a.numrecs_seen)
                                                : shape_len(a.varid, i);
    };
    const bool var1 = a.api == Api::var1;
    const bool strided = a.stride != nullptr && (a.api == Api::vars || a.api == Api::varm);
    auto count = [&](size_t i) { return var1 ? int64_t(1) : a.count[i]; };
    auto bounded = [&](size_t i) { return i > 0 || !a.is_write || !is_record_var(a.varid); };
    for (size_t i = 0; i < nd; ++i) {
        if (a.start[i] < 0) return NC_EINVALCOORDS;
        if (bounded(i) && (a.start[i] > len(i) || (a.start[i] == len(i) && count(i) > 0)))
            return NC_EINVALCOORDS;
    }
    for (size_t i = 0; i < nd; ++i)
        if (count(i) < 0) return NC_ENEGATIVECNT;
    for (size_t i = 0; i < nd; ++i) {
        if (!bounded(i)) continue;
        const int64_t c = count(i), st = strided ? a.stride[i] : 1;
        // With a stride of 0 or less (refused below) only start + count is checked.
        if (st > 0 ? (c > 0 && a.start[i] + (c - 1) * st >= len(i)) : a.start[i] + c > len(i))
            return NC_EEDGE;
    }
    if (strided)
        for (size_t i = 0; i < nd; ++i)
            if (a.stride[i] <= 0) return NC_ESTRIDE;
    return NC_NOERR;
}

// PnetCDF sets numrecs to start + (count - 1) * stride + 1 along the record dimension when that
// is larger, even when nothing is written (a zero count, here or along another dimension).
void Header::note_write(const Access &a) {
    if (!is_record_var(a.varid) || a.api == Api::var) return;
    const bool strided = a.stride != nullptr && (a.api == Api::vars || a.api == Api::varm);
    const int64_t c0 = a.api == Api::var1 ? 1 : a.count[0], s0 = strided ? a.stride[0] : 1;
    numrecs_ = std::max(numrecs_, a.start[0] + (c0 - 1) * s0 + 1);
}

// ---------------------------------------------------------------------------------------------
// Serialization: "DTFH", version, format, numrecs, dimensions, global attributes, variables, the
// variables' begins. Integers little-endian; attribute values little-endian per element.

namespace {

constexpr char kMagic[4] = {'D', 'T', 'F', 'H'};
constexpr uint32_t kVersion = 2;

// Copies n elements of `size` bytes, reversing each on big-endian hosts (values are kept
// little-endian on the wire).
void copy_le(char *dst, const char *src, size_t n, int size) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    for (size_t k = 0; k < n; ++k)
        for (int b = 0; b < size; ++b) dst[k * size + b] = src[k * size + size - 1 - b];
#else
    if (n > 0) std::memcpy(dst, src, n * size);
#endif
}

class Writer : public ByteWriter {
public:
    void str(const std::string &s) {
        u32(static_cast<uint32_t>(s.size()));
        raw(s.data(), s.size());
    }
    void att(const Att &a) {
        str(a.name);
        u32(static_cast<uint32_t>(a.type));
        u64(static_cast<uint64_t>(a.len));
        copy_le(extend(a.bytes.size()), a.bytes.data(), static_cast<size_t>(a.len), type_size(a.type));
    }
    void atts(const std::vector<Att> &v) {
        u32(static_cast<uint32_t>(v.size()));
        for (const Att &a : v) att(a);
    }
};

class Reader : public ByteReader {
public:
    using ByteReader::ByteReader;
    bool i32(int *v) {
        int32_t x;
        if (!ByteReader::i32(&x)) return false;
        *v = x;
        return true;
    }
    bool str(std::string *s) {
        uint32_t n;
        const char *p = nullptr;
        if (!u32(&n) || !(p = view(n))) return false;
        s->assign(p, n);
        return true;
    }
    // A count of items that need at least `min_size` bytes each: bounded by what is left.
    bool count(uint32_t *n, size_t min_size) { return u32(n) && *n <= left() / min_size; }
};

// A name as check_name() accepts it (no embedded NUL).
bool valid_name(const std::string &name) {
    return name.find('\0') == std::string::npos && check_name(name.c_str()) == NC_NOERR;
}

// A valid name, unique among `taken`.
template <class T> bool good_name(const std::string &name, const std::vector<T> &taken) {
    return valid_name(name) && std::none_of(taken.begin(), taken.end(), [&](const T &t) { return t.name == name; });
}

bool read_att(Reader &r, const std::vector<Att> &taken, Att *a) {
    uint64_t len;
    if (!r.str(&a->name) || !good_name(a->name, taken) || !r.i32(&a->type) || !r.u64(&len))
        return false;
    // (no format check: copy_att puts CDF-5 types into CDF-1/CDF-2 files too)
    if (!is_valid_type(a->type)) return false;
    const int size = type_size(a->type);
    if (len > r.left() / size) return false;
    a->len = static_cast<int64_t>(len);
    a->bytes.resize(len * size);
    copy_le(a->bytes.data(), r.view(len * size), len, size);
    return true;
}

bool read_atts(Reader &r, std::vector<Att> *atts) {
    uint32_t n;
    if (!r.count(&n, 16)) return false;
    for (uint32_t i = 0; i < n; ++i) {
        Att a;
        if (!read_att(r, *atts, &a)) return false;
        atts->push_back(std::move(a));
    }
    return true;
}

} // namespace

namespace {
constexpr size_t kNumrecsAt = 12, kNumrecsEnd = 20; // where encode() writes the record count

// How the attributes `b` of `owner` differ from `a` (empty: they do not).
std::string att_difference(const std::string &owner, const std::vector<Att> &a, const std::vector<Att> &b) {
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        if (i >= b.size()) return format("%s attribute '%s' deleted", owner.c_str(), a[i].name.c_str());
        if (i >= a.size()) return format("%s attribute '%s' added", owner.c_str(), b[i].name.c_str());
        if (a[i].name != b[i].name)
            return format("%s attribute '%s' renamed or deleted ('%s' in its place)", owner.c_str(), a[i].name.c_str(),
                          b[i].name.c_str());
        if (a[i].type != b[i].type || a[i].len != b[i].len || a[i].bytes != b[i].bytes)
            return format("%s attribute '%s' changed", owner.c_str(), a[i].name.c_str());
    }
    return {};
}
} // namespace

std::string Header::difference(const Header &later) const {
    const Header &b = later;
    for (size_t i = 0; i < std::max(d().dims.size(), b.d().dims.size()); ++i) {
        if (i >= d().dims.size()) return dtf::format("dimension '%s' added", b.d().dims[i].name.c_str());
        if (i >= b.d().dims.size()) return dtf::format("dimension '%s' gone", d().dims[i].name.c_str());
        if (d().dims[i].name != b.d().dims[i].name)
            return dtf::format("dimension '%s' renamed to '%s'", d().dims[i].name.c_str(), b.d().dims[i].name.c_str());
    }
    if (std::string diff = att_difference("global", d().gatts, b.d().gatts); !diff.empty()) return diff;
    for (size_t i = 0; i < std::max(d().vars.size(), b.d().vars.size()); ++i) {
        if (i >= d().vars.size()) return dtf::format("variable '%s' added", b.d().vars[i].name.c_str());
        if (i >= b.d().vars.size()) return dtf::format("variable '%s' gone", d().vars[i].name.c_str());
        const Var &x = d().vars[i], &y = b.d().vars[i];
        if (x.name != y.name) return dtf::format("variable '%s' renamed to '%s'", x.name.c_str(), y.name.c_str());
        if (x.type != y.type || x.dimids != y.dimids)
            return dtf::format("variable '%s' defined otherwise", x.name.c_str());
        if (std::string d = att_difference("variable '" + x.name + "'", x.atts, y.atts); !d.empty()) return d;
    }
    if (format_ != b.format_) return "the format changed";
    if (layout_.begin != b.layout_.begin || layout_.extent != b.layout_.extent)
        return "the variables moved in the file";
    return {};
}

bool Header::same_but_numrecs(const std::vector<char> &a, const std::vector<char> &b) {
    return a.size() == b.size() && a.size() >= kNumrecsEnd &&
           std::equal(a.begin(), a.begin() + kNumrecsAt, b.begin()) &&
           std::equal(a.begin() + kNumrecsEnd, a.end(), b.begin() + kNumrecsEnd);
}

std::vector<char> Header::encode() const {
    Writer w;
    w.raw(kMagic, 4);   // [0, 4)
    w.u32(kVersion);    // [4, 8)
    w.u32(static_cast<uint32_t>(format_)); // [8, 12)
    w.u64(static_cast<uint64_t>(numrecs_)); // [kNumrecsAt, kNumrecsEnd)
    w.u32(static_cast<uint32_t>(d().dims.size()));
    for (const Dim &d : d().dims) {
        w.str(d.name);
        w.u64(static_cast<uint64_t>(d.len));
    }
    w.atts(d().gatts);
    w.u32(static_cast<uint32_t>(d().vars.size()));
    for (const Var &v : d().vars) {
        w.str(v.name);
        w.u32(static_cast<uint32_t>(v.type));
        w.u32(static_cast<uint32_t>(v.dimids.size()));
        for (int d : v.dimids) w.u32(static_cast<uint32_t>(d));
        w.atts(v.atts);
    }
    // Where the last enddef put the variables (those defined since have no offset yet).
    w.u32(static_cast<uint32_t>(layout_.begin.size()));
    for (int64_t b : layout_.begin) w.u64(static_cast<uint64_t>(b));
    return w.take();
}

namespace {

bool read_dims(Reader &r, int format, std::vector<Dim> *dims) {
    uint32_t n;
    if (!r.count(&n, 12)) return false;
    bool unlimited = false;
    for (uint32_t i = 0; i < n; ++i) {
        Dim d;
        if (!r.str(&d.name) || !good_name(d.name, *dims) || !r.i64(&d.len)) return false;
        if (d.len < 0 || d.len > max_dim_len(format)) return false;
        if (d.len == NC_UNLIMITED && std::exchange(unlimited, true)) return false;
        dims->push_back(std::move(d));
    }
    return true;
}

bool read_var(Reader &r, int format, const std::unordered_map<std::string, int> &taken, Var *v) {
    uint32_t ndims;
    if (!r.str(&v->name) || !valid_name(v->name) || taken.count(v->name) || !r.i32(&v->type)) return false;
    if (!is_valid_type(v->type) || (format != NC_FORMAT_CDF5 && is_cdf5_type(v->type)))
        return false;
    if (!r.count(&ndims, 4)) return false;
    for (uint32_t i = 0; i < ndims; ++i) { // (checked by the caller, as def_var does)
        int d;
        if (!r.i32(&d)) return false;
        v->dimids.push_back(d);
    }
    v->no_fill = false; // what ncmpi_open gives every variable
    return read_atts(r, &v->atts);
}

} // namespace

int Header::decode(const char *data, size_t size, Header *out) {
    Reader r(data, size);
    char magic[4];
    uint32_t version;
    if (!r.raw(magic, 4) || std::memcmp(magic, kMagic, 4) != 0 || !r.u32(&version) ||
        version != kVersion)
        return NC_ENOTNC;
    int format;
    Header h;
    if (!r.i32(&format) || !valid_format(format) || !r.i64(&h.numrecs_) || h.numrecs_ < 0) return NC_EINVAL;
    h.format_ = format;
    if (!read_dims(r, format, &h.mut().dims) || !read_atts(r, &h.mut().gatts)) return NC_EINVAL;
    uint32_t nvars;
    if (!r.count(&nvars, 14)) return NC_EINVAL;
    for (uint32_t i = 0; i < nvars; ++i) {
        Var v;
        if (!read_var(r, format, h.d().var_ids, &v)) return NC_EINVAL;
        // (dimension ids, the unlimited one first only, the size within 64 bits: as def_var)
        if (h.check_def_var(v.type, static_cast<int>(v.dimids.size()), v.dimids.data()) != NC_NOERR)
            return NC_EINVAL;
        h.mut().var_ids.emplace(v.name, static_cast<int>(h.mut().vars.size()));
        h.mut().vars.push_back(std::move(v));
    }
    uint32_t nbegins;
    if (!r.count(&nbegins, 8) || nbegins > nvars) return NC_EINVAL;
    Layout &l = h.layout_;
    l.begin.resize(nbegins);
    for (int64_t &b : l.begin)
        if (!r.i64(&b) || b < 0) return NC_EINVAL;
    if (r.left() != 0) return NC_EINVAL;
    h.define_mode_ = false;
    h.old_nvars_ = static_cast<int>(h.d().vars.size());
    // What ncmpi_open takes from the begins (ncmpio_NC_begins on a header read): the record section
    // at the first record variable, or at the end of the last fixed-size one; nothing without variables.
    int first_rec = -1, nrec = 0;
    for (size_t i = 0; i < nbegins; ++i) {
        const int id = static_cast<int>(i);
        if (h.is_record_var(id)) {
            if (first_rec < 0) first_rec = id;
            l.recsize = wrap_add(l.recsize, h.var_len(id));
            ++nrec;
        } else {
            l.begin_rec = wrap_add(l.begin[i], h.var_len(id));
            if (l.extent == 0) l.extent = l.begin[i];
        }
    }
    if (first_rec >= 0) {
        l.begin_rec = l.begin[static_cast<size_t>(first_rec)];
        if (nrec == 1) {
            const Var &v = h.d().vars[static_cast<size_t>(first_rec)];
            l.recsize = type_size(v.type);
            for (size_t i = 1; i < v.dimids.size(); ++i) l.recsize *= h.d().dims[static_cast<size_t>(v.dimids[i])].len;
        }
    }
    if (l.extent == 0) l.extent = l.begin_rec;
    *out = std::move(h);
    return NC_NOERR;
}

namespace {
// The NC_INT64 values of the netCDF-4 mark of `varid` (NC_GLOBAL: the file's); none without a mark.
std::vector<long long> netcdf4_mark(const Header &h, int varid) {
    nc_type type = NC_NAT;
    int64_t len = 0;
    if (h.inq_att(varid, kNetcdf4Mark, &type, &len) != NC_NOERR || len < 1) return {};
    std::vector<long long> mark(static_cast<size_t>(len));
    if (h.get_att(varid, kNetcdf4Mark, mark.data(), NC_INT64) != NC_NOERR) return {};
    return mark;
}
} // namespace

long long netcdf4_format(const Header &h) {
    const std::vector<long long> mark = netcdf4_mark(h, NC_GLOBAL);
    return mark.size() >= 2 ? mark[1] : 0;
}

bool netcdf4_unfilled(const Header &h, int varid) {
    const std::vector<long long> mark = netcdf4_mark(h, varid);
    return !mark.empty() && mark.back() != 0;
}

} // namespace dtf::model
