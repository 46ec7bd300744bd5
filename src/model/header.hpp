// The netCDF data model of one virtual file: what the define calls of a writer build (dimensions,
// variables, attributes, fill settings) and what the inquiry calls of a reader see. Pure C++17, no
// MPI. Every call returns NC_NOERR or exactly the code PnetCDF 1.12.3 returns for the same call in
// the same state (checks in PnetCDF's order), so that the dispatcher can return it unchanged.
// tests/unit/test_model_oracle.cpp runs scripted and random call sequences against real PnetCDF
// and this class side by side and requires identical codes and results.
//
// Ids are PnetCDF's: dimensions and variables are numbered 0.. in definition order, attributes
// 0.. per variable (NC_GLOBAL for the file's). Names are compared after the normalization that
// PnetCDF applies (Unicode NFC; see set_name_normalizer). Attribute values are kept in native
// byte order; encode() writes little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <pnetcdf.h>

namespace dtf::model {

struct Dim {
    std::string name;
    int64_t len = 0; // NC_UNLIMITED (0) for the record dimension (its length is numrecs())
};

struct Att {
    std::string name;
    nc_type type = NC_NAT;
    int64_t len = 0;         // number of values
    std::vector<char> bytes; // len * type_size(type) bytes, native byte order
};

struct Var {
    std::string name;
    nc_type type = NC_NAT;
    std::vector<int> dimids;
    std::vector<Att> atts;
    // Fill mode of the variable. PnetCDF sets it from the file's fill mode at def_var, overwrites
    // it for every variable at set_fill and per variable at def_var_fill. A fill value is the
    // _FillValue attribute (def_var_fill writes one), not a separate field. (False after decode, as
    // ncmpi_open sets it for every variable.)
    bool no_fill = true;
};

// Which flavour of a data call (ncmpi_put_var_*, _var1_, _vara_, _vars_, _varm_).
enum class Api { var, var1, vara, vars, varm };

// One data access, as the dispatcher sees it before doing anything.
struct Access {
    int varid = 0;
    Api api = Api::vara;
    const int64_t *start = nullptr;  // ignored for Api::var
    const int64_t *count = nullptr;  // ignored for Api::var and Api::var1
    const int64_t *stride = nullptr; // Api::vars/varm only; nullptr means all 1
    bool is_write = false;
    bool collective = true;  // the _all variants
    // iput/iget/bput: posted in any mode (define mode too; the wait is in data mode), so neither the
    // define mode nor the data mode is checked.
    bool nonblocking = false;
    // Type of the user buffer (NC_CHAR for _text, NC_BYTE for _schar, ...). NC_NAT for the
    // flexible API, where PnetCDF makes no NC_ECHAR check.
    nc_type memtype = NC_NAT;
    // A read's bound along the record dimension when the program sees more records than the header
    // holds (a replayed writer session's count taken from its plan): the larger of the two.
    int64_t numrecs_seen = 0;
};

// PnetCDF normalizes names to Unicode NFC before storing and comparing them. Names in ASCII (or
// already in NFC) need nothing; to handle the rest exactly, install a normalizer (the runtime can
// wrap PnetCDF's own). It returns false when the name cannot be normalized (NC_EBADNAME).
// Process-wide; set it before any Header is used. nullptr restores the default (identity).
using NameNormalizer = bool (*)(const std::string &name, std::string *normalized);
void set_name_normalizer(NameNormalizer normalizer);

// PnetCDF's name rules: NC_EBADNAME (null, empty, '/', control characters, invalid UTF-8, bad first
// character, trailing white space) or NC_EMAXNAME (more than NC_MAX_NAME bytes).
int check_name(const char *name);

// The format ncmpi_create gives a file: NC_64BIT_DATA -> CDF-5, NC_64BIT_OFFSET -> CDF-2,
// NC_CLASSIC_MODEL -> CDF-1, otherwise `default_format` (ncmpi_set_default_format). Errors:
// NC_EINVAL_CMODE (both 64-bit flags), NC_ENOTBUILT (netCDF-4).
int format_from_cmode(int cmode, int default_format, int *format);

class Header {
public:
    // A new, empty file in define mode (as after ncmpi_create): NC_FORMAT_CLASSIC,
    // NC_FORMAT_CDF2 or NC_FORMAT_CDF5 (anything else is taken as NC_FORMAT_CLASSIC).
    explicit Header(int format = NC_FORMAT_CLASSIC);

    // ---- file state
    // ncmpi_enddef, or ncmpi__enddef with its free space and alignment arguments (NC_EINVAL if negative).
    int enddef(int64_t h_minfree = 0, int64_t v_align = 0, int64_t v_minfree = 0, int64_t r_align = 0);
    // The alignment hints the file was created or opened with (nc_header_align_size,
    // nc_var_align_size, nc_record_align_size; 0 where not given): they shape the layout at enddef.
    void set_alignment_hints(int64_t header, int64_t var, int64_t record);
    // The alignments the layout uses since the first enddef (PnetCDF reports them as the hints in
    // ncmpi_inq_file_info); all 0 before.
    struct Alignment {
        int64_t header = 0, var = 0, record = 0;
    };
    const Alignment &alignment() const { return align_; }
    int redef();
    bool in_define_mode() const { return define_mode_; }
    // Opened without NC_WRITE: modifying calls return NC_EPERM (those that need define mode
    // first check it: def_dim, def_var, def_var_fill and enddef return NC_ENOTINDEFINE).
    void set_read_only(bool read_only) { read_only_ = read_only; }
    bool read_only() const { return read_only_; }
    int begin_indep_data();
    int end_indep_data();
    bool in_indep_mode() const { return indep_mode_; }

    // ---- define mode
    int def_dim(const char *name, int64_t len, int *idp);
    int def_var(const char *name, nc_type type, int ndims, const int *dimids, int *varidp);
    int rename_dim(int dimid, const char *newname);
    int rename_var(int varid, const char *newname);
    // values: `len` values of C type `memtype` (NC_CHAR for text, NC_BYTE signed char, NC_UBYTE
    // unsigned char, ..., NC_INT64 long long, NC_UINT64 unsigned long long), converted to `type`.
    // NC_ERANGE: stored anyway, out-of-range values replaced by the default fill value.
    int put_att(int varid, const char *name, nc_type type, int64_t len, const void *values,
                nc_type memtype);
    int del_att(int varid, const char *name);
    int rename_att(int varid, const char *name, const char *newname);
    // ncmpi_copy_att from this file to `out` (which may be *this).
    int copy_att(int varid_in, const char *name, Header &out, int varid_out) const;
    // `data_mode`: netCDF-C's classic library sets it in data mode too (PnetCDF only in define mode).
    int set_fill(int fillmode, int *old_modep, bool data_mode = false);
    int def_var_fill(int varid, int no_fill, const void *fill_value);

    // ---- inquiries (any mode); null output pointers are skipped; names need NC_MAX_NAME+1 bytes
    int inq(int *ndims, int *nvars, int *ngatts, int *unlimdimid) const;
    int inq_format(int *format) const;
    int inq_num_rec_vars(int *nvars) const;
    int inq_num_fix_vars(int *nvars) const;
    int inq_dim(int dimid, char *name, int64_t *len) const;
    int inq_dimid(const char *name, int *idp) const;
    // NC_EGLOBAL for NC_GLOBAL (as ncmpi_inq_varname, _vartype, _varndims, _vardimid) ...
    int inq_var(int varid, char *name, nc_type *type, int *ndims, int *dimids, int *natts) const;
    // ... but ncmpi_inq_varnatts(NC_GLOBAL) is the number of global attributes.
    int inq_varnatts(int varid, int *natts) const;
    int inq_varid(const char *name, int *varidp) const;
    int inq_att(int varid, const char *name, nc_type *type, int64_t *len) const;
    int inq_attid(int varid, const char *name, int *idp) const;
    int inq_attname(int varid, int attnum, char *name) const;
    // memtype as for put_att; NC_NAT: the attribute's own type (ncmpi_get_att).
    int get_att(int varid, const char *name, void *out, nc_type memtype) const;
    // fill_value (type_size of the variable's type): the _FillValue attribute or the default.
    int inq_var_fill(int varid, int *no_fill, void *fill_value) const;
    int fill_mode() const { return fill_mode_; } // NC_FILL or NC_NOFILL

    // A box of one variable's elements (start and count per dimension).
    struct Region {
        int varid;
        std::vector<int64_t> start, count;
    };
    // ---- the fill values PnetCDF writes into a file (it reads zeros where nothing was written)
    // What a successful enddef fills (call it right after): every variable in fill mode defined since
    // define mode was entered, a fixed-size one whole, a record variable over the records the file
    // has (none in a new file). PnetCDF fills nothing else by itself: records added later stay
    // unwritten (zeros) unless ncmpi_fill_var_rec fills them.
    std::vector<Region> enddef_fills() const;
    // Whether enddef_fills() depends on the record count: a record variable in fill mode defined since
    // a redefinition (or an open) entered define mode. (The writer ranks agree on the count first.)
    bool fills_records() const;
    // ncmpi_fill_var_rec(varid, recno): its checks, in PnetCDF's order: NC_EPERM, NC_EINDEFINE,
    // NC_EGLOBAL, NC_ENOTVAR, NC_ENOTRECVAR, NC_EINDEP, NC_ENOTFILL (a variable in NC_NOFILL mode
    // without a _FillValue attribute; with one, the record is filled all the same), NC_EINVALCOORDS;
    // then the record count covers the record, and *fill is its region. (PnetCDF 1.12.3 returns the
    // first six only in its safe mode, PNETCDF_SAFE_MODE=1; without it, it fills all the same, also
    // in define mode, or crashes on a bad varid.)
    int fill_rec(int varid, int64_t recno, Region *fill);
    // ncmpi_put_vard/get_vard: the elements the file bytes `runs` hold ((offset, bytes) from the
    // begin of variable `varid` in this layout, in the file type's order), as regions in that order,
    // and the record count PnetCDF gives a put of them (numrecs() if `varid` is not a record
    // variable). NC_EINVAL when a byte is not in an element of a variable of `varid`'s type (the
    // header, padding, a variable of another type) or a run cuts an element.
    int vard_regions(int varid, const std::vector<std::pair<int64_t, int64_t>> &runs, std::vector<Region> *out,
                     int64_t *numrecs) const;

    // ---- record dimension and data access
    int64_t numrecs() const { return numrecs_; }
    void set_numrecs(int64_t n) { numrecs_ = n; }
    // The checks PnetCDF makes before a put/get, in its order: NC_EPERM, NC_EINDEFINE, NC_EINDEP/NC_ENOTINDEP
    // (those two not for a nonblocking call), NC_EGLOBAL/NC_ENOTVAR, NC_ECHAR, then start/count/stride:
    // NC_EINVALCOORDS (also for a null start), NC_ENEGATIVECNT, NC_EEDGE (also for a null count), NC_ESTRIDE.
    // Reads of record variables are bounded by numrecs(); writes are not.
    int check_access(const Access &a) const;
    // After a successful write, as PnetCDF: numrecs = max(numrecs, start[0] + (count[0] - 1) *
    // stride[0] + 1) for a record variable, even when nothing was written (zero counts).
    void note_write(const Access &a);

    // ---- file layout as PnetCDF computes it at enddef (header extent aligned to 512 bytes, its
    // default): ncmpi_inq_header_size, _header_extent, _recsize and _varoffset. Values of the
    // last enddef (or decode); a variable defined since has no offset (NC_ENOTVAR).
    int inq_layout(int64_t *header_size, int64_t *header_extent, int64_t *recsize) const;
    int inq_varoffset(int varid, int64_t *offset) const;
    // The size of the file PnetCDF writes with this layout and numrecs() records once every
    // variable is written: the end of the fixed-size variables, or of the last record.
    int64_t file_size() const;
    // The header as PnetCDF writes it at the start of the file (the CDF-1/CDF-2/CDF-5 format,
    // big-endian, header_size() bytes): what a real file of this header begins with.
    std::vector<char> file_header() const;

    // ---- direct views for the runtime (ids are indices)
    int format() const { return format_; }
    const std::vector<Dim> &dims() const { return d().dims; }
    const std::vector<Var> &vars() const { return d().vars; }
    const std::vector<Att> &global_atts() const { return d().gatts; }
    int unlimdimid() const;
    bool is_record_var(int varid) const;
    // Shape with numrecs() as the record dimension's length; empty for a scalar or a bad varid.
    std::vector<int64_t> shape(int varid) const;
    // Its length along dimension i of a valid varid (no vector: asked at every put and get).
    int64_t shape_len(int varid, size_t i) const {
        const Dim &d = dims()[static_cast<size_t>(vars()[static_cast<size_t>(varid)].dimids[i])];
        return d.len == NC_UNLIMITED ? numrecs_ : d.len;
    }

    // ---- serialization (to send the header to readers): what a file holds (with the variables'
    // begins, as a file header has them). decode() validates
    // everything (as the define calls would), never reads past `size`, and returns NC_ENOTNC
    // (bad magic/version) or NC_EINVAL (anything else malformed) without touching *out. The
    // decoded header is what ncmpi_open(NC_WRITE) gives: data mode, collective, writable,
    // NC_NOFILL, every variable's no_fill 0; set_read_only(true) for NC_NOWRITE.
    std::vector<char> encode() const;
    // A number that changes with every call that may change what encode() gives but for the record
    // count (every mutator of the definitions, the attributes, the fill modes and the layout; a
    // decode gives a new one; a copy keeps it): a writer whose header kept its revision since it
    // encoded it knows the header is that encoding's without encoding it again.
    uint64_t revision() const { return revision_; }
    // Whether two encodings are of the same header but perhaps for the record count.
    static bool same_but_numrecs(const std::vector<char> &a, const std::vector<char> &b);
    // The first way in which `later`'s definitions (dimensions, variables, attributes and their values)
    // differ from these ("variable 'v' renamed to 'w'", "global attribute 'a' deleted", ...); empty
    // when they are the same.
    std::string difference(const Header &later) const;
    static int decode(const char *data, size_t size, Header *out);

private:
    int check_def_dim(const std::string &name, int64_t len) const;
    int check_def_var(nc_type type, int ndims, const int *dimids) const;
    int check_put_att(int varid, const std::string &name, nc_type type, int64_t len,
                      const void *values, nc_type memtype) const;
    int check_vlens() const;
    std::vector<Att> *atts_of(int varid);
    const std::vector<Att> *atts_of(int varid) const;
    int find_att(int varid, const char *name, int *index) const;
    int check_att_space(int varid, const std::string &name, nc_type type, int64_t len) const;
    void store_att(int varid, Att a);
    int find_dim(const std::string &name) const;
    int find_var(const std::string &name) const;
    int check_start_count(const Access &a) const;
    void changed(); // a new revision(): every mutator calls it before it changes anything
    struct Layout {
        int64_t extent = 0, recsize = 0, begin_rec = 0;
        std::vector<int64_t> begin; // per variable
    };
    int64_t var_len(int varid) const;
    int64_t header_size() const;
    int compute_layout(const Layout *old, int64_t h_minfree, int64_t v_minfree, Layout *out) const;

    int format_;
    bool define_mode_ = true;
    bool read_only_ = false;
    bool indep_mode_ = false;
    int fill_mode_ = NC_NOFILL; // PnetCDF's default
    int64_t numrecs_ = 0;
    // Variables that existed when define mode was (re)entered: PnetCDF refuses to give them a fill
    // value (NC_ELATEFILL). 0 for a new file, all variables after redef or decode (open).
    int old_nvars_ = 0;
    Layout layout_;
    // The layout when define mode was entered by redef or decode (none in a new file): no offset moves down.
    bool has_old_ = false;
    Layout old_layout_;
    Alignment hints_, align_; // given (0: not), and in use since the first enddef
    // The definitions, shared by the copies of a header until one of them changes them (mut()): a
    // reader's open copies the header of its session's definition or plan, and copying and freeing
    // those of files of 89 and 143 variables cost a quarter of a replayed cycle's instructions on an
    // assimilation rank of the original DTF's pattern (bench/callcost.py --calls original).
    struct Defs {
        std::vector<Dim> dims;
        std::vector<Var> vars;
        // Variable ids by name (find_var): a file of n variables is defined or decoded in O(n), not
        // O(n^2) name comparisons (143 variables: about 10,000 of them per file and cycle).
        std::unordered_map<std::string, int> var_ids;
        std::vector<Att> gatts;
    };
    const Defs &d() const { return defs_ ? *defs_ : kNoDefs; } // (none in a header moved from)
    Defs &mut(); // this header's own definitions, to change (copied first if another header shares them)
    static const Defs kNoDefs;
    std::shared_ptr<const Defs> defs_ = std::make_shared<Defs>();
    uint64_t revision_ = 0; // (the constructor gives a new one)
};

} // namespace dtf::model
