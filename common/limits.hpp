#pragma once

namespace sixways {

// Raises the soft RLIMIT_NOFILE to the hard limit, so a program can hold as many sockets as the
// system lets it. Returns the soft limit now in force. Limits are read here, never hard-coded.
long raise_open_file_limit();

}  // namespace sixways
