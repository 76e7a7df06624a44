#pragma once

namespace sixways {

// Raises the soft RLIMIT_NOFILE to the hard limit, so a program can hold as many sockets as the
// system lets it. Returns the soft limit now in force. Limits are read here, never hard-coded.
long raise_open_file_limit();

// How many descriptors this process has open now (the entries of /proc/self/fd), or -1 when that
// cannot be read. With the limit above, it says how many more sockets the process can open.
long open_descriptor_count();

}  // namespace sixways
