// Unit tests of src/config: the INI parser (valid inputs and every error message), file-name
// patterns, path normalization, the DTF_* environment and the describe() round trip.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"

using namespace dtf::config;

namespace {

int g_passed = 0, g_failed = 0;

void check(bool ok, const std::string &name, const char *what, int line) {
    if (ok) {
        ++g_passed;
        return;
    }
    ++g_failed;
    std::fprintf(stderr, "FAIL [%s] %s (test_config.cpp:%d)\n", name.c_str(), what, line);
}

void check_eq(const std::string &got, const std::string &want, const std::string &name, int line) {
    check(got == want, name, ("\n  got:  " + got + "\n  want: " + want).c_str(), line);
}

#define CHECK(name, cond) check((cond), (name), #cond, __LINE__)
#define CHECK_EQ(name, got, want) check_eq((got), (want), (name), __LINE__)

// The message of the DTF_ERR_CONFIG error that f() throws, or "<no error>" / "<wrong code>".
template <class F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const dtf::Error &e) {
        return e.code() == DTF_ERR_CONFIG ? e.what() : std::string("<wrong code> ") + e.what();
    }
    return "<no error>";
}

std::string parse_error(const std::string &text) {
    return error_of([&] { parse(text, "t.ini"); });
}

// Field-wise equality, ignoring where the config came from (path, header lines).
bool same(const Config &a, const Config &b) {
    if (a.components != b.components || a.buffer_data != b.buffer_data ||
        a.iodb_build_mode != b.iodb_build_mode || a.do_checksum != b.do_checksum ||
        a.log_ioreqs != b.log_ioreqs || a.files.size() != b.files.size())
        return false;
    for (size_t i = 0; i < a.files.size(); ++i) {
        const FileRule &x = a.files[i], &y = b.files[i];
        if (x.pattern != y.pattern || x.excludes != y.excludes || x.comp1 != y.comp1 ||
            x.comp2 != y.comp2 || x.writer != y.writer || x.readers != y.readers || x.mode != y.mode || x.replay_io != y.replay_io ||
            x.num_sessions != y.num_sessions || x.writer_closes != y.writer_closes || x.write_only != y.write_only ||
            x.mirror_io_root != y.mirror_io_root || x.persist != y.persist || x.aggregators != y.aggregators ||
            x.subfiles != y.subfiles || x.aggregate_steps != y.aggregate_steps || x.ioserver != y.ioserver ||
            x.fallback_s != y.fallback_s || x.serial_readers != y.serial_readers)
            return false;
    }
    return true;
}

// Lines 1-4: two components. Lines 5-8: one valid [FILE] section.
const std::string kInfo = "[INFO]\nncomp=2\ncomp_name=\"model\"\ncomp_name=\"assim\"\n";
const std::string kFile = "[FILE]\nfilename=\"a.nc\"\ncomp1=\"model\"\ncomp2=\"assim\"\n";

// The example of the documentation, with every key.
const std::string kExample = R"([INFO]
ncomp=2
comp_name="model"
comp_name="assim"
buffer_data=0            ; refer to the put buffers until close
iodb_build_mode=2
do_checksum=1
log_ioreqs=0
[FILE]
filename="data/%/hist.%.nc"   ; % matches any run of characters
exclude_name="060000"
exclude_name="restart"
comp1="model"
comp2="assim"
mode="transfer"
replay_io=1
num_sessions=3
writer_closes=2
write_only=0
mirror_io_root=1

[FILE]
filename="obs.nc"
comp1="assim"
comp2="model"
mode="file"
write_only=1
serial_readers=1
)";

// ---------------------------------------------------------------------------------------------

struct BadCase {
    const char *name;
    std::string text;
    std::string message;
};

void test_errors() {
    const std::string file_keys = "filename, exclude_name, comp1, comp2, writer, readers, mode, replay_io, "
                                  "num_sessions, writer_closes, write_only, serial_readers, mirror_io_root, persist, "
                                  "aggregators, "
                                  "subfiles, aggregate_steps, ioserver, fallback";
    // Lines 1-5: three components.
    const std::string info3 = "[INFO]\nncomp=3\ncomp_name=model\ncomp_name=obs\ncomp_name=assim\n";
    const BadCase cases[] = {
        {"unknown key, close", "[INFO]\nncomp=1\ncomp_nam=\"m\"\n",
         "t.ini:3: unknown key 'comp_nam' in [INFO]; did you mean 'comp_name'?"},
        {"unknown key, case-insensitive hint", "[INFO]\nNCOMPS=1\n",
         "t.ini:2: unknown key 'ncomps' in [INFO]; did you mean 'ncomp'?"},
        {"unknown key in FILE, close", kInfo + "[FILE]\ncomp3=model\n",
         "t.ini:6: unknown key 'comp3' in [FILE]; did you mean 'comp1'?"},
        {"unknown key, two letters swapped", kInfo + "[FILE]\nmdoe=\"file\"\n",
         "t.ini:6: unknown key 'mdoe' in [FILE]; did you mean 'mode'?"},
        {"a shell's wildcard in a pattern", kInfo + "[FILE]\nfilename=\"out_*.nc\"\n",
         "t.ini:6: filename=\"out_*.nc\": '*' is not a wildcard here, and no file would match; dtf's wildcard "
         "is '%' (any run of characters): filename=\"out_%.nc\""},
        {"a shell's one-character wildcard", kInfo + "[FILE]\nfilename=\"h?.nc\"\n",
         "t.ini:6: filename=\"h?.nc\": '?' is not a wildcard here, and no file would match; dtf's wildcard "
         "is '%' (any run of characters): filename=\"h%.nc\""},
        {"unknown key, far", kInfo + "[FILE]\nbogus=1\n",
         "t.ini:6: unknown key 'bogus' in [FILE]; expected one of: " + file_keys},
        {"unknown section", kInfo + "[FILES]\n",
         "t.ini:5: unknown section [FILES]; expected [INFO] or [FILE]"},
        {"key outside section", "ncomp=1\n[INFO]\n",
         "t.ini:1: key 'ncomp' outside any section; expected an [INFO] or [FILE] header before it"},
        {"line without =", kInfo + "comp_name \"x\"\n",
         "t.ini:5: expected 'key=value' or a [SECTION] header, got 'comp_name \"x\"'"},
        {"= only inside a comment", "[INFO]\nncomp ; 2=3\n",
         "t.ini:2: expected 'key=value' or a [SECTION] header, got 'ncomp'"},
        {"missing key", "[INFO]\n = 3\n", "t.ini:2: missing key before '='; expected 'key=value'"},
        {"empty value", "[INFO]\nncomp=2\ncomp_name=\ncomp_name=b\n",
         "t.ini:3: empty value for 'comp_name'; expected a component name"},
        {"empty quoted value", kInfo + "[FILE]\nfilename=\"\"\n",
         "t.ini:6: empty value for 'filename'; expected a file name pattern"},
        {"empty value before comment", "[INFO]\nncomp=   ; two\n",
         "t.ini:2: empty value for 'ncomp'; expected the number of components (an integer >= 1)"},
        {"bad integer", "[INFO]\nncomp=two\n",
         "t.ini:2: bad value 'two' for 'ncomp'; expected an integer >= 1"},
        {"integer with suffix", "[INFO]\nncomp=2x\n",
         "t.ini:2: bad value '2x' for 'ncomp'; expected an integer >= 1"},
        {"ncomp zero", "[INFO]\nncomp=0\n",
         "t.ini:2: bad value '0' for 'ncomp'; expected an integer >= 1"},
        {"negative iodb_build_mode", kInfo + "iodb_build_mode=-1\n",
         "t.ini:5: bad value '-1' for 'iodb_build_mode'; expected an integer >= 0"},
        {"bad boolean", kInfo + "buffer_data=2\n",
         "t.ini:5: bad value '2' for 'buffer_data'; expected 0 or 1"},
        {"boolean word", kFile + kInfo + "do_checksum=yes\n",
         "t.ini:9: bad value 'yes' for 'do_checksum'; expected 0 or 1"},
        {"bad replay_io", kInfo + kFile + "replay_io=true\n",
         "t.ini:9: bad value 'true' for 'replay_io'; expected 0 or 1"},
        {"missing filename", kInfo + "[FILE]\ncomp1=\"model\"\ncomp2=\"assim\"\n",
         "t.ini:5: [FILE] section without 'filename='; expected a file name pattern"},
        {"missing comp1", kInfo + "[FILE]\nfilename=a.nc\ncomp2=\"assim\"\n",
         "t.ini:5: [FILE] section without 'comp1='; expected a component name (comp1= and comp2=, or writer= "
         "and readers=)"},
        {"missing comp2", kInfo + "[FILE]\nfilename=a.nc\ncomp1=\"assim\"\n",
         "t.ini:5: [FILE] section without 'comp2='; expected a component name (comp1= and comp2=, or writer= "
         "and readers=)"},
        {"writer without readers", info3 + "[FILE]\nfilename=a.nc\nwriter=model\n",
         "t.ini:6: [FILE] section with writer= but without 'readers='; expected the components that read the file "
         "(or persist=1 in transfer mode: an output file that dtf writes)"},
        {"output file with replay", info3 + "[FILE]\nfilename=a.nc\nwriter=model\npersist=1\nreplay_io=1\n",
         "t.ini:10: replay_io=1 in a [FILE] section without readers (line 6); expected replay_io=0: nothing is "
         "transferred"},
        {"readers without writer", info3 + "[FILE]\nfilename=a.nc\nreaders=obs assim\n",
         "t.ini:6: [FILE] section with readers= but without 'writer='; expected the component that writes the file"},
        {"readers with comp1", info3 + "[FILE]\nfilename=a.nc\ncomp1=model\nreaders=obs assim\n",
         "t.ini:9: readers= in a [FILE] section with comp1= (line 8); expected either comp1=/comp2= (two components "
         "sharing the file) or writer=/readers= (one writer, one or more readers)"},
        {"readers: only separators", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=\" , \"\n",
         "t.ini:9: bad value ' , ' for 'readers'; expected component names separated by spaces or commas"},
        {"unknown writer", info3 + "[FILE]\nfilename=a.nc\nwriter=ocean\nreaders=obs\n",
         "t.ini:8: unknown component 'ocean' in writer=; expected one of: model, obs, assim"},
        {"unknown reader", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs,letkf\n",
         "t.ini:9: unknown component 'letkf' in readers=; expected one of: model, obs, assim"},
        {"writer among readers", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs model\n",
         "t.ini:9: 'model' is the writer (line 8) and in readers=; expected the components that read what it writes"},
        {"reader twice", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs, assim, obs\n",
         "t.ini:9: 'obs' is listed twice in readers="},
        {"replay with several readers", info3 + "[FILE]\nfilename=a.nc\nreplay_io=1\nwriter=model\nreaders=obs assim\n",
         "t.ini:8: replay_io=1 with 2 readers (line 10) is not supported yet; expected replay_io=0, or one reader"},
        {"ioserver without persist", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs\nioserver=assim\n",
         "t.ini:10: ioserver= in a [FILE] section without persist=1 or fallback= in transfer mode; expected "
         "persist=1 or fallback=, and mode=\"transfer\" (it says how dtf writes the files it writes itself)"},
        {"ioserver unknown", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs\npersist=1\nioserver=io\n",
         "t.ini:11: unknown component 'io' in ioserver=; expected one of: model, obs, assim"},
        {"ioserver reads the file", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs\npersist=1\nioserver=obs\n",
         "t.ini:11: 'obs' is the I/O server of the file and also writes or reads it; expected a component that runs "
         "dtf-ioserver"},
        {"ioserver with aggregators", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs\npersist=1\n"
         "aggregators=2\nioserver=assim\n",
         "t.ini:12: ioserver= with aggregators= (line 11); expected one of them: the I/O server's ranks are the writers "
         "of its files"},
        {"aggregators without persist", kInfo + kFile + "aggregators=2\n",
         "t.ini:9: aggregators= in a [FILE] section without persist=1 or fallback= in transfer mode; expected "
         "persist=1 or fallback=, and mode=\"transfer\" (it says how dtf writes the files it writes itself)"},
        {"aggregate_steps in file mode", kInfo + kFile + "persist=1\nmode=file\naggregate_steps=4\n",
         "t.ini:11: aggregate_steps= in a [FILE] section without persist=1 or fallback= in transfer mode; expected "
         "persist=1 or fallback=, and mode=\"transfer\" (it says how dtf writes the files it writes itself)"},
        {"aggregators < 0", kInfo + kFile + "persist=1\naggregators=-1\n",
         "t.ini:10: bad value '-1' for 'aggregators'; expected an integer >= 0"},
        {"aggregate_steps 0", kInfo + kFile + "persist=1\naggregate_steps=0\n",
         "t.ini:10: bad value '0' for 'aggregate_steps'; expected an integer >= 1"},
        {"subfiles without aggregators", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs\npersist=1\nsubfiles=1\n",
         "t.ini:11: subfiles=1 without aggregators=; expected aggregators=A (A >= 1: one subfile per aggregator)"},
        {"subfiles with comp1/comp2", kInfo + kFile + "persist=1\naggregators=1\nsubfiles=1\n",
         "t.ini:11: subfiles=1 in a [FILE] section with comp1=/comp2=; expected writer= and readers= (a subfile holds "
         "what one group of the writer's ranks wrote, which only one writer can continue)"},
        {"fallback with persist", kInfo + kFile + "persist=1\nfallback=wait\n",
         "t.ini:10: fallback= in a [FILE] section with persist=1; expected it in transfer mode with readers, persist=0 "
         "and replay_io=0 (the file it writes when the readers are lost is the one persist=1 writes anyway)"},
        {"fallback in file mode", kInfo + kFile + "mode=file\nfallback=2\n",
         "t.ini:10: fallback= in a [FILE] section in file mode; expected it in transfer mode with readers, persist=0 "
         "and replay_io=0 (the file it writes when the readers are lost is the one persist=1 writes anyway)"},
        {"fallback with subfiles", info3 + "[FILE]\nfilename=a.nc\nwriter=model\nreaders=obs\nfallback=wait\n"
         "aggregators=2\nsubfiles=1\n",
         "t.ini:12: subfiles=1 with fallback= (line 10); expected it with persist=1 only (a reader that comes late reads "
         "the session's one file, as soon as it is written)"},
        {"fallback with aggregate_steps", kInfo + kFile + "fallback=2\naggregate_steps=3\n",
         "t.ini:10: aggregate_steps > 1 with fallback= (line 9); expected it with persist=1 only (a reader that comes "
         "late reads the session's one file, as soon as it is written)"},
        {"fallback bad value", kInfo + kFile + "fallback=soon\n",
         "t.ini:9: bad value 'soon' for 'fallback'; expected \"fail\", \"wait\" or a number of seconds >= 0"},
        {"fallback negative", kInfo + kFile + "fallback=-1\n",
         "t.ini:9: bad value '-1' for 'fallback'; expected \"fail\", \"wait\" or a number of seconds >= 0"},
        {"too few comp_name", "[INFO]\nncomp=3\ncomp_name=a\ncomp_name=b\n",
         "t.ini:2: ncomp=3 but 2 comp_name= given; expected one comp_name= per component"},
        {"too many comp_name", "[INFO]\ncomp_name=a\nncomp=1\ncomp_name=b\n",
         "t.ini:3: ncomp=1 but 2 comp_name= given; expected one comp_name= per component"},
        {"ncomp missing", "[INFO]\ncomp_name=a\n",
         "t.ini:1: [INFO] section without 'ncomp='; expected the number of components "
         "(1 comp_name= given)"},
        {"duplicate component", "[INFO]\nncomp=2\ncomp_name=a\ncomp_name='a'\n",
         "t.ini:4: duplicate component name 'a' (first given on line 3)"},
        {"unknown comp1", kInfo + "[FILE]\nfilename=a.nc\ncomp1=ocean\ncomp2=assim\n",
         "t.ini:7: unknown component 'ocean' in comp1=; expected one of: model, assim"},
        {"unknown comp2 (case matters)", kInfo + "[FILE]\nfilename=a.nc\ncomp1=model\ncomp2=Assim\n",
         "t.ini:8: unknown component 'Assim' in comp2=; expected one of: model, assim"},
        {"unknown component, FILE first", "[FILE]\nfilename=a.nc\ncomp1=x\ncomp2=model\n" + kInfo,
         "t.ini:3: unknown component 'x' in comp1=; expected one of: model, assim"},
        {"comp1 == comp2", kInfo + "[FILE]\nfilename=a.nc\ncomp1=model\ncomp2=model\n",
         "t.ini:8: comp1 and comp2 are both 'model'; expected two different components"},
        {"bad mode", kInfo + kFile + "mode=copy\n",
         "t.ini:9: bad value 'copy' for 'mode'; expected \"transfer\" or \"file\""},
        {"duplicate pattern", kInfo + kFile + kFile,
         "t.ini:10: duplicate filename pattern 'a.nc' (the first one is on line 6)"},
        {"duplicate pattern after normalization",
         kInfo + kFile + "[FILE]\nfilename=./a.nc\ncomp1=model\ncomp2=assim\n",
         "t.ini:10: duplicate filename pattern './a.nc' (the first one is on line 6)"},
        {"unterminated double quote", "[INFO]\nncomp=1\ncomp_name=\"model\n",
         "t.ini:3: unterminated quote in the value of 'comp_name'; expected a closing \""},
        {"unterminated single quote", "[INFO]\nncomp=1\ncomp_name='model\n",
         "t.ini:3: unterminated quote in the value of 'comp_name'; expected a closing '"},
        {"text after quoted value", "[INFO]\nncomp=1\ncomp_name=\"a\" b\n",
         "t.ini:3: unexpected text 'b' after the quoted value of 'comp_name'; expected a comment"},
        {"repeated key in FILE", kInfo + kFile + "comp1=\"assim\"\n",
         "t.ini:9: key 'comp1' repeated in this [FILE] section (first given on line 7)"},
        {"repeated key in INFO", kInfo + "NComp=2\n",
         "t.ini:5: key 'ncomp' repeated in this [INFO] section (first given on line 2)"},
        {"num_sessions zero", kInfo + kFile + "num_sessions=0\n",
         "t.ini:9: bad value '0' for 'num_sessions'; expected an integer >= 1"},
        {"writer_closes zero", kInfo + kFile + "writer_closes=0\n",
         "t.ini:9: bad value '0' for 'writer_closes'; expected an integer >= 1"},
        {"serial_readers zero", kInfo + kFile + "serial_readers=0\n",
         "t.ini:9: bad value '0' for 'serial_readers'; expected an integer >= 1"},
        {"duplicate INFO", kInfo + "[INFO]\n",
         "t.ini:5: duplicate [INFO] section (the first one is on line 1)"},
        {"no INFO", kFile, "t.ini:1: no [INFO] section; expected one with ncomp= and comp_name= entries"},
        {"empty file", "", "t.ini:1: no [INFO] section; expected one with ncomp= and comp_name= entries"},
        {"unterminated header", "[INFO\n", "t.ini:1: unterminated section header '[INFO'; expected ']'"},
        {"text after header", "[INFO] x\n",
         "t.ini:1: unexpected text 'x' after the section header; expected a comment"},
        {"CRLF line numbers", "[INFO]\r\nncomp=x\r\n",
         "t.ini:2: bad value 'x' for 'ncomp'; expected an integer >= 1"},
    };
    for (const auto &c : cases) CHECK_EQ(c.name, parse_error(c.text), c.message);
}

void test_example() {
    Config c = parse(kExample, "ex.ini");
    const std::string n = "example";
    CHECK(n, c.path == "ex.ini");
    CHECK(n, (c.components == std::vector<std::string>{"model", "assim"}));
    CHECK(n, !c.buffer_data && c.iodb_build_mode == 2 && c.do_checksum && !c.log_ioreqs);
    CHECK(n, c.files.size() == 2);
    const FileRule &a = c.files.at(0), &b = c.files.at(1);
    CHECK_EQ(n, a.pattern, "data/%/hist.%.nc");
    CHECK(n, (a.excludes == std::vector<std::string>{"060000", "restart"}));
    CHECK(n, a.comp1 == "model" && a.comp2 == "assim" && a.mode == Mode::Transfer);
    CHECK(n, a.replay_io && a.num_sessions == 3 && a.writer_closes == 2 && !a.write_only && a.mirror_io_root && a.line == 9);
    CHECK(n, b.pattern == "obs.nc" && b.comp1 == "assim" && b.mode == Mode::File && b.write_only && b.serial_readers == 1);
    CHECK(n, a.serial_readers == 0);
    CHECK(n, !b.replay_io && b.num_sessions == 1 && b.writer_closes == 1 && !b.mirror_io_root && b.line == 22);
    CHECK(n, c.component_index("assim") == 1 && c.component_index("ocean") == -1);
}

// Comments, quotes, whitespace, case of keys and sections, CRLF, byte order mark, section order.
void test_syntax() {
    const std::string text = "\xEF\xBB\xBF  # comment\n"
                             "; comment\n"
                             "! comment\n"
                             "\n"
                             "  [ file ]   ; sections may come in any order\n"
                             "FileName = data/%/hist.%.nc ; bare value, trailing comment\n"
                             "comp1=Model A\n"
                             "\tcomp2 = \"x;y#z!\"\t! comment chars inside quotes are kept\n"
                             "MODE = File\n"
                             "  [ Info ]  \n"
                             "  NCOMP = 2   # two\n"
                             "Comp_Name = 'Model A'  \n"
                             "comp_name=  \"x;y#z!\"   ! comment\n";
    for (const std::string eol : {"\n", "\r\n"}) {
        std::string t = text;
        for (size_t p = 0; (p = t.find('\n', p)) != std::string::npos; p += eol.size())
            t.replace(p, 1, eol);
        const std::string n = eol == "\n" ? "syntax LF" : "syntax CRLF";
        Config c;
        std::string err = error_of([&] { c = parse(t, "s.ini"); });
        CHECK_EQ(n, err, "<no error>");
        CHECK(n, (c.components == std::vector<std::string>{"Model A", "x;y#z!"}));
        CHECK(n, c.files.size() == 1);
        if (c.files.size() != 1) continue;
        CHECK_EQ(n, c.files[0].pattern, "data/%/hist.%.nc");
        CHECK_EQ(n, c.files[0].comp1, "Model A");
        CHECK_EQ(n, c.files[0].comp2, "x;y#z!");
        CHECK(n, c.files[0].mode == Mode::File && c.files[0].line == 5);
    }
    Config c = parse("[INFO]\nncomp=1\ncomp_name=\" spaced \"\n", "q.ini");
    CHECK_EQ("quoted spaces kept", c.components.at(0), " spaced ");
    CHECK("no [FILE] is valid", c.files.empty());
    Config d = parse(kInfo + kFile, "d.ini");
    const FileRule &r = d.files.at(0);
    CHECK("defaults", r.mode == Mode::Transfer && !r.replay_io && r.num_sessions == 1 &&
                          !r.write_only && !r.mirror_io_root && r.excludes.empty());
    CHECK("defaults", d.buffer_data && d.iodb_build_mode == 0 && !d.do_checksum && !d.log_ioreqs);
}

void test_patterns() {
    struct Case {
        const char *pattern, *path;
        bool match;
    };
    const Case cases[] = {
        {"hist.%.nc", "/d/run/hist.01.nc", true},
        {"hist.%.nc", "/d/run/myhist.01.nc", false}, // whole components only
        {"hist.%.nc", "/d/run/hist..nc", true},      // '%' may match nothing
        {"hist.%.nc", "/d/run/hist.01.nc4", false},
        {"run/hist.%.nc", "/d/run/hist.1.nc", true},
        {"run/hist.%.nc", "/d/xrun/hist.1.nc", false},
        {"data/%/hist.%.nc", "/w/data/r1/hist.2.nc", true},
        {"data/%/hist.%.nc", "/w/data/a/b/hist.2.nc", false}, // '%' never crosses '/'
        {"data/%/hist.%.nc", "/w/data/hist.2.nc", false},
        {"%", "/a/b", true},
        {"%.nc", "/a/b.nc", true},
        {"a%b%c", "/abc", true},
        {"a%b%c", "/aXbYbZc", true},
        {"a%b%c", "/aXc", false},
        {"%%x", "/yx", true},
        {"/d/run/hist.%.nc", "/d/run/hist.1.nc", true},
        {"/run/hist.%.nc", "/d/run/hist.1.nc", false}, // absolute: the whole path
        {"/d//run/./hist.nc", "/d/run/hist.nc", true},
        {"./hist.nc", "/x/hist.nc", true},
        {"../data/hist.nc", "/a/data/hist.nc", true},
        {"hist.nc", "/hist.nc", true},
        {"Hist.nc", "/hist.nc", false},
        {"", "/a", false},
        {"a/b/c.nc", "/b/c.nc", false},
        // neither '%' nor '/': a part of the file name (the original DTF's filename="pressure_wave_test")
        {"pressure_wave_test", "/r/pressure_wave_test.0001.field.nc", true},
        {"pressure_wave_test", "/r/pressure_wave_test/x.nc", false}, // (of the file name, not a directory)
        {"out.nc", "/r/my_out.nc", true},
        {"run/out.nc", "/r/myrun/out.nc", false}, // (with '/': whole components)
    };
    for (const auto &c : cases)
        CHECK(std::string("pattern '") + c.pattern + "' vs '" + c.path + "'",
              pattern_matches(c.pattern, c.path) == c.match);
}

void test_normalize() {
    struct Case {
        const char *path, *cwd, *want;
    };
    const Case cases[] = {
        {"a/b.nc", "/home/u", "/home/u/a/b.nc"},
        {"/a//b/./c/../d.nc", "/x", "/a/b/d.nc"},
        {"../x.nc", "/home/u", "/home/x.nc"},
        {"./x.nc", "/home/u/", "/home/u/x.nc"},
        {"/../..//a", "/", "/a"},
        {"/", "/x", "/"},
        {"dir/", "/x", "/x/dir"},
        {"", "/x/y/", "/x/y"},
        {".", "/x", "/x"},
        {"..", "/", "/"},
    };
    for (const auto &c : cases)
        CHECK_EQ(std::string("normalize '") + c.path + "' in '" + c.cwd + "'",
                 normalize_path(c.path, c.cwd), c.want);
}

void test_match_and_peers() {
    const std::string first = "[FILE]\nfilename=hist.%.nc\nexclude_name=060000\n"
                              "exclude_name=restart\ncomp1=model\ncomp2=assim\n";
    const std::string second = "[FILE]\nfilename=%\ncomp1=model\ncomp2=assim\nmode=file\n";
    Config c = parse(kInfo + first + second, "m.ini");
    CHECK("match first rule", c.match("/d/hist.01.nc") == &c.files.at(0));
    CHECK("excluded -> next rule", c.match("/d/hist.060000.nc") == &c.files.at(1));
    CHECK("exclude in directory", c.match("/d/restart/hist.01.nc") == &c.files.at(1));
    Config only = parse(kInfo + first, "m.ini");
    CHECK("excluded -> not handled", only.match("/d/hist.060000.nc") == nullptr);
    CHECK("no pattern -> not handled", only.match("/d/other.nc") == nullptr);

    Config p = parse("[INFO]\nncomp=4\ncomp_name=a\ncomp_name=b\ncomp_name=c\ncomp_name=d\n"
                     "[FILE]\nfilename=1\ncomp1=a\ncomp2=b\n"
                     "[FILE]\nfilename=2\ncomp1=c\ncomp2=a\n"
                     "[FILE]\nfilename=3\ncomp1=b\ncomp2=a\n",
                     "p.ini");
    CHECK("peers of a", (p.peers_of(0) == std::vector<int>{1, 2}));
    CHECK("peers of b", (p.peers_of(1) == std::vector<int>{0}));
    CHECK("peers of c", (p.peers_of(2) == std::vector<int>{0}));
    CHECK("peers of d", p.peers_of(3).empty());

    // may_go_without: only a writer whose every file shared with that peer falls back (fallback=).
    Config g = parse("[INFO]\nncomp=4\ncomp_name=m\ncomp_name=assim\ncomp_name=obs\ncomp_name=d\n"
                     "[FILE]\nfilename=h1\nwriter=m\nreaders=assim, obs\nfallback=\"wait\"\n"
                     "[FILE]\nfilename=h2\nwriter=m\nreaders=assim\nfallback=3\n"
                     "[FILE]\nfilename=h3\nwriter=m\nreaders=obs\n"
                     "[FILE]\nfilename=x\nwriter=d\nreaders=m\nfallback=1\n",
                     "g.ini");
    CHECK("the writer may go on without a reader of fallback files", g.may_go_without(0, 1));
    CHECK("not without a reader of one file that does not fall back", !g.may_go_without(0, 2));
    CHECK("a reader never goes on without its writer", !g.may_go_without(1, 0) && !g.may_go_without(0, 3));
    CHECK("not without a component it shares nothing with", !g.may_go_without(1, 2) && !g.may_go_without(0, 0));

    // ioserver=: the server is connected to every component of its files, they to it.
    Config io = parse("[INFO]\nncomp=4\ncomp_name=model\ncomp_name=assim\ncomp_name=io\ncomp_name=d\n"
                      "[FILE]\nfilename=h\nwriter=model\nreaders=assim\npersist=1\nioserver=io\n"
                      "[FILE]\nfilename=x\ncomp1=d\ncomp2=model\n",
                      "io.ini");
    CHECK("peers of an I/O server", (io.peers_of(2) == std::vector<int>{0, 1}));
    CHECK("no going on without an I/O server", !io.may_go_without(0, 2) && !io.may_go_without(2, 0));
    // fallback= files are written as persist=1 writes them: by the I/O server, or by aggregators.
    Config fio = parse("[INFO]\nncomp=3\ncomp_name=model\ncomp_name=assim\ncomp_name=io\n"
                       "[FILE]\nfilename=h\nwriter=model\nreaders=assim\nfallback=1\nioserver=io\n"
                       "[FILE]\nfilename=g\nwriter=model\nreaders=assim\nfallback=wait\naggregators=1\n",
                       "fio.ini");
    CHECK("fallback= with ioserver= and aggregators=", fio.files[0].ioserver == "io" && fio.files[1].aggregators == 1);
    CHECK("going on without the reader, not the I/O server", fio.may_go_without(0, 1) && !fio.may_go_without(0, 2));
    // Connecting: the pairs that must connect first, then those one side may go on without, so that a
    // reader that never comes does not keep the I/O server waiting; the others wait longer for them.
    Config order = parse("[INFO]\nncomp=5\ncomp_name=m0\ncomp_name=m1\ncomp_name=assim\ncomp_name=obs\ncomp_name=io\n"
                         "[FILE]\nfilename=h0\nwriter=m0\nreaders=assim\nfallback=1\nioserver=io\n"
                         "[FILE]\nfilename=o0\nwriter=m0\nreaders=obs\nfallback=1\n"
                         "[FILE]\nfilename=h1\nwriter=m1\nreaders=assim\nioserver=io\npersist=1\n",
                         "order.ini");
    CHECK("connect order of a writer", (order.peers_of(0) == std::vector<int>{2, 3, 4}) &&
                                           (order.connect_order(0) == std::vector<int>{4, 2, 3}));
    CHECK("connect order of the others", (order.connect_order(1) == std::vector<int>{2, 4}) &&
                                             (order.connect_order(2) == std::vector<int>{1, 4, 0}) &&
                                             (order.connect_order(4) == std::vector<int>{0, 1, 2}));
    CHECK("optional pairs before", order.optional_pairs_before(0, 4) == 0 && order.optional_pairs_before(0, 2) == 0 &&
                                       order.optional_pairs_before(0, 3) == 1 && order.optional_pairs_before(2, 0) == 0 &&
                                       order.optional_pairs_before(1, 2) == 0);
    // An I/O server may go on without a reader of files that fall back, and only of such files.
    Config srv = parse("[INFO]\nncomp=4\ncomp_name=m\ncomp_name=assim\ncomp_name=obs\ncomp_name=io\n"
                       "[FILE]\nfilename=h\nwriter=m\nreaders=assim, obs\nfallback=1\nioserver=io\n"
                       "[FILE]\nfilename=g\nwriter=m\nreaders=obs\npersist=1\nioserver=io\n",
                       "srv.ini");
    CHECK("the I/O server without a reader of fallback files", srv.may_go_without(3, 1) && !srv.may_go_without(3, 2));
    CHECK("not without its writer, nor they without it", !srv.may_go_without(3, 0) && !srv.may_go_without(0, 3) &&
                                                            !srv.may_go_without(1, 3));
    CHECK("the server connects to the optional reader last", (srv.connect_order(3) == std::vector<int>{0, 2, 1}));
    CHECK("peers of its writer", (io.peers_of(0) == std::vector<int>{1, 2, 3}));
    CHECK("peers of its reader", (io.peers_of(1) == std::vector<int>{0, 2}));
    CHECK("the I/O server does not handle the file", !io.files[0].involves("io"));
    Config out = parse("[INFO]\nncomp=2\ncomp_name=model\ncomp_name=io\n"
                       "[FILE]\nfilename=o\nwriter=model\npersist=1\nioserver=io\n", "out.ini");
    CHECK("an output file has no readers", out.files[0].readers.empty() && out.files[0].partners("model").empty());
    CHECK("an output file's writer and its I/O server", (out.peers_of(0) == std::vector<int>{1}) &&
                                                         (out.peers_of(1) == std::vector<int>{0}));

    // writer=/readers=: the writer exchanges the file with each reader, a reader only with the writer.
    Config f = parse("[INFO]\nncomp=4\ncomp_name=model\ncomp_name=obs\ncomp_name=assim\ncomp_name=d\n"
                     "[FILE]\nfilename=hist.%.nc\nwriter=model\nreaders=obs, assim\n",
                     "f.ini");
    const FileRule &r = f.files.at(0);
    CHECK("fan-out readers", r.fixed_roles() && (r.readers == std::vector<std::string>{"obs", "assim"}));
    CHECK("fan-out involves", r.involves("model") && r.involves("obs") && r.involves("assim") && !r.involves("d"));
    CHECK("fan-out partners", (r.partners("model") == std::vector<std::string>{"obs", "assim"}) &&
                                  (r.partners("assim") == std::vector<std::string>{"model"}) && r.partners("d").empty());
    CHECK("fan-out peers of model", (f.peers_of(0) == std::vector<int>{1, 2}));
    CHECK("fan-out peers of obs", (f.peers_of(1) == std::vector<int>{0}));
    CHECK("fan-out peers of assim", (f.peers_of(2) == std::vector<int>{0}));
    CHECK("fan-out peers of d", f.peers_of(3).empty());
    CHECK("pair has no fixed roles", !p.files.at(0).fixed_roles() && p.files.at(0).involves("a") &&
                                         (p.files.at(0).partners("b") == std::vector<std::string>{"a"}));
}

void test_env() {
    Settings d = settings_from_env({});
    CHECK("env defaults", d.timeout_s == 120.0 && d.verbose == 0 && !d.print_stats &&
                              d.max_workgroup_size == 64 && d.rendezvous == "auto" &&
                              d.ini_file.empty() && d.global_path.empty() && d.warnings.empty() &&
                              d.progress_thread && !d.progress_thread_asked);
    CHECK("env progress thread", !settings_from_env({"DTF_PROGRESS_THREAD=0"}).progress_thread &&
                                     settings_from_env({"DTF_PROGRESS_THREAD=1"}).progress_thread &&
                                     settings_from_env({"DTF_PROGRESS_THREAD=1"}).progress_thread_asked);
    Settings s = settings_from_env({"DTF_INI_FILE=/a.ini", "DTF_GLOBAL_PATH=/g", "DTF_TIMEOUT=2.5",
                                    "DTF_VERBOSE_LEVEL=2", "DTF_PRINT_STATS=1",
                                    "DTF_RENDEZVOUS=file", "MAX_WORKGROUP_SIZE=8", "PATH=/bin",
                                    "NOEQUALS", "DTF_TIMEOUT_X_Y_Z="});
    CHECK("env valid", s.ini_file == "/a.ini" && s.global_path == "/g" && s.timeout_s == 2.5 &&
                           s.verbose == 2 && s.print_stats && s.rendezvous == "file" &&
                           s.max_workgroup_size == 8);
    CHECK("env valid", s.warnings.size() == 1);
    // The original DTF's run scripts set DTF_VERBOSE_LEVEL=-1 (quiet): errors only, as 0.
    CHECK("env quiet", settings_from_env({"DTF_VERBOSE_LEVEL=-1"}).verbose == 0 &&
                           settings_from_env({"DTF_VERBOSE_LEVEL=-1"}).warnings.empty() &&
                           settings_from_env({"DTF_VERBOSE_LEVEL=-7"}).verbose == 0);
    CHECK("env empty = unset", settings_from_env({"DTF_TIMEOUT=", "DTF_RENDEZVOUS="}).timeout_s == 120.0);
    CHECK("env 1e3", settings_from_env({"DTF_TIMEOUT=1e3"}).timeout_s == 1000.0);

    const std::pair<const char *, const char *> bad[] = {
        {"DTF_TIMEOUT=abc", "DTF_TIMEOUT='abc': expected a positive number of seconds"},
        {"DTF_TIMEOUT=0", "DTF_TIMEOUT='0': expected a positive number of seconds"},
        {"DTF_TIMEOUT=-1", "DTF_TIMEOUT='-1': expected a positive number of seconds"},
        {"DTF_TIMEOUT=inf", "DTF_TIMEOUT='inf': expected a positive number of seconds"},
        {"DTF_TIMEOUT=nan", "DTF_TIMEOUT='nan': expected a positive number of seconds"},
        {"DTF_TIMEOUT=10s", "DTF_TIMEOUT='10s': expected a positive number of seconds"},
        {"DTF_VERBOSE_LEVEL=high", "DTF_VERBOSE_LEVEL='high': expected an integer"},
        {"DTF_PRINT_STATS=yes", "DTF_PRINT_STATS='yes': expected 0, 1 or 2"},
        {"DTF_PROGRESS_THREAD=on", "DTF_PROGRESS_THREAD='on': expected 0 or 1"},
        {"DTF_RENDEZVOUS=tcp", "DTF_RENDEZVOUS='tcp': expected auto, file or name"},
        {"MAX_WORKGROUP_SIZE=0", "MAX_WORKGROUP_SIZE='0': expected an integer >= 1"},
    };
    for (const auto &[entry, message] : bad)
        CHECK_EQ(std::string("env ") + entry, error_of([&] { settings_from_env({entry}); }), message);

    const std::pair<const char *, const char *> unknown[] = {
        {"DTF_TIMOUT=5", "unknown environment variable DTF_TIMOUT ignored; did you mean DTF_TIMEOUT?"},
        {"DTF_FOO=1", "unknown environment variable DTF_FOO ignored"},
        {"DTF_MAX_WORKGROUP_SIZE=4",
         "unknown environment variable DTF_MAX_WORKGROUP_SIZE ignored; did you mean MAX_WORKGROUP_SIZE?"},
    };
    for (const auto &[entry, warning] : unknown) {
        Settings w = settings_from_env({entry});
        CHECK(std::string("env warning ") + entry, w.warnings.size() == 1 && w.timeout_s == 120.0);
        if (w.warnings.size() == 1) CHECK_EQ(std::string("env warning ") + entry, w.warnings[0], warning);
    }
}

void test_describe() {
    Settings s = settings_from_env({"DTF_TIMEOUT=2.5", "DTF_VERBOSE_LEVEL=1"});
    const std::string tricky = "[INFO]\nncomp=2\ncomp_name='say \"hi\"'\ncomp_name=b\n"
                               "[FILE]\nfilename=\"x;y.nc\"\ncomp1='say \"hi\"'\ncomp2=b\nfallback=2.5\n";
    const std::string fan = "[INFO]\nncomp=3\ncomp_name=m\ncomp_name=o\ncomp_name=a\n"
                            "[FILE]\nfilename=h.nc\nwriter=m\nreaders=o,a\nreplay_io=0\nfallback=\"wait\"\n"
                            "[FILE]\nfilename=g.nc\nwriter=a\nreaders=m\nreplay_io=1\npersist=1\n"
                            "[FILE]\nfilename=o.nc\nwriter=m\nreaders=a\npersist=1\naggregators=3\nsubfiles=1\n"
                            "aggregate_steps=4\n"
                            "[FILE]\nfilename=p.nc\ncomp1=m\ncomp2=o\npersist=1\nioserver=a\n"
                            "[FILE]\nfilename=out.nc\nwriter=m\npersist=1\nioserver=a\n";
    for (const std::string &text : {kExample, kInfo, kInfo + kFile, tricky, fan}) {
        Config c = parse(text, "r.ini");
        std::string out = describe(c, s);
        Config back;
        std::string err = error_of([&] { back = parse(out, "described.ini"); });
        CHECK_EQ("describe round trip parses", err, "<no error>");
        CHECK("describe round trip equal", same(c, back));
        if (!same(c, back)) std::fprintf(stderr, "%s\n", out.c_str());
    }
    std::string out = describe(parse(kExample, "r.ini"), s);
    CHECK("describe settings", out.find("\n; DTF_TIMEOUT=2.5\n") != std::string::npos);
    CHECK("describe settings", out.find("\n; DTF_VERBOSE_LEVEL=1\n") != std::string::npos);
    CHECK("describe defaults", out.find("\nnum_sessions=1\nwriter_closes=1\n") != std::string::npos);
    CHECK("describe quoted", out.find("\nmode=\"file\"\n") != std::string::npos);
    CHECK("describe default timeout",
          describe(parse(kInfo, "r.ini"), Settings{}).find("; DTF_TIMEOUT=120\n") != std::string::npos);
}

void test_load() {
    CHECK_EQ("load missing", error_of([] { load("/nonexistent/x.ini"); }),
             "cannot read dtf configuration file '/nonexistent/x.ini': No such file or directory");
    CHECK_EQ("load directory", error_of([] { load("/"); }),
             "cannot read dtf configuration file '/': Is a directory");
    const char *tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtf_test_config_XXXXXX";
    int fd = mkstemp(path.data());
    CHECK("mkstemp", fd >= 0);
    if (fd < 0) return;
    const std::string text = "[INFO]\nncomp=1\ncomp_name=m\n";
    CHECK("write", write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    Config c;
    CHECK_EQ("load file", error_of([&] { c = load(path); }), "<no error>");
    CHECK("load file", c.path == path && c.components == std::vector<std::string>{"m"});
    unlink(path.c_str());
}

// Aggregator groups: consecutive ranks, min(A, size) groups, none empty, each written by its first rank.
void test_aggregator_groups() {
    for (int size = 1; size <= 13; ++size)
        for (int a = 1; a <= size + 2; ++a) {
            const int groups = std::min(a, size);
            int last = -1;
            bool ok = aggregator_group(0, size, a) == 0 && aggregator_group(size - 1, size, a) == groups - 1;
            for (int r = 0; r < size; ++r) {
                const int g = aggregator_group(r, size, a);
                ok = ok && (g == last || g == last + 1);
                if (g != last) ok = ok && aggregator_rank(g, size, a) == r; // its first rank
                last = g;
            }
            CHECK("aggregator groups " + std::to_string(size) + "/" + std::to_string(a), ok);
        }
    CHECK("aggregator of 8 ranks, 3 groups", aggregator_rank(2, 8, 3) == 6 && aggregator_group(5, 8, 3) == 1);
    CHECK_EQ("subfile path", subfile_path("/d/hist.1.nc", 2), "/d/hist.1.nc.subfile_2");
}

} // namespace

int main() {
    test_aggregator_groups();
    test_errors();
    test_example();
    test_syntax();
    test_patterns();
    test_normalize();
    test_match_and_peers();
    test_env();
    test_describe();
    test_load();
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
