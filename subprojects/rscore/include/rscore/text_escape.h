// Text from inputs (node and file names, process-group names, request files, anything a
// recording or a dump carries), made safe to print on a terminal, in a log or in a text report.
//
// A name is data, but printed raw it can act: a newline starts a line of its own (a forged
// "STRAGGLER: node7" in a report, a forged "wrote /etc/shadow" in a log), a carriage return
// overwrites what came before, ESC (\x1b) starts a terminal escape sequence (colours, cursor
// moves, a window title, on some terminals more), C1 controls do the same on terminals that
// take 8-bit controls, and Unicode's bidirectional overrides reorder what the reader sees.
// EscapeText renders every one of them visibly instead, so the text keeps one line and shows
// what it holds:
//   \n \r \t                 as those two characters;
//   other C0 bytes and DEL   as \xNN (ESC is \x1b);
//   C1 controls U+0080-U+009F, the line and paragraph separators U+2028/U+2029 and the
//   bidirectional controls (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069)  as \uNNNN;
//   a byte that is not part of valid UTF-8   as \xNN (a lone 0x9b is CSI to an 8-bit terminal).
// Everything else (valid UTF-8, backslashes included) is left as it is, so ordinary names read
// the same. Every text output of the tools prints input data through it; JSON has its own
// escaping (rscore/json.h) and HTML escapes markup on top of this.
#pragma once

#include <string>
#include <string_view>

namespace rs {

// `text` with every control character and invalid byte written visibly (above).
std::string EscapeText(std::string_view text);

// True when EscapeText would change `text` (nothing to escape: the text prints as it is).
bool NeedsEscape(std::string_view text);

}  // namespace rs
