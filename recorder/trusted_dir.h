// The directories the root recorder writes into, checked before it writes anything.
//
// The recorder runs as root on nodes other users log into, and `fs.protected_symlinks` may be
// 0: a file it opens by name in a directory another user can write may be a link that user
// planted (to /etc/shadow, say), or be replaced by one between a check and the open. So, as
// OpenSSH checks the path of an authorized_keys file, every directory from / down to the one
// the recorder writes into must be
//   - owned by root or by the recorder's own user,
//   - not writable by group or others, unless its sticky bit is set (/tmp, /var/tmp: others
//     may add names there but cannot rename or remove the recorder's),
// and the path is used from then on in its resolved form (no symbolic link left in it whose
// target its owner could change). A private directory (the ring directory, the cut
// directory) must in addition be writable by nobody else at all, sticky bit or not: the
// recorder reads what is in it (cut requests, pid files) as its own.
//
// Within a directory that passes as shared (sticky), the recorder creates every file of its
// own with O_EXCL under a name it chose (see RecordingDb), and only renames onto the name
// the user gave.
#pragma once

#include <sys/types.h>

#include <string>

#include "rscore/result.h"

namespace rs::rec {

enum class DirUse {
  kOutput,   // --out's directory: a sticky directory others write to is fine
  kPrivate,  // --ring-dir, --cut-dir: nobody but its owner (root, the recorder) writes there
};

// Checks `dir` (which must exist) and every directory above it for `use`, as seen by a
// recorder running as `self`; returns its resolved path (realpath). `what` names the flag
// in errors ("--cut-dir"). The error says what is wrong and what to do.
rs::Result<std::string> TrustedDir(const std::string& dir, DirUse use, const std::string& what,
                                   uid_t self);

}  // namespace rs::rec
