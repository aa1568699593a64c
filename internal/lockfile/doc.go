// Package lockfile is the exclusive lock a tenax process holds on a
// directory it writes (a job, a fix run): an flock on a lock file that
// names its holder ("pid host"). The kernel drops the lock when the
// process dies, however it dies, so a crash never leaves a directory
// locked, and a reader tells a directory at work from a dead one by
// probing it.
//
// One wrinkle makes this a package rather than three lines: the lock
// file is close-on-exec, but a child forked by any goroutine of the
// holder (a check command, git, an exec task) holds the lock from its
// fork until its exec. A directory closed while such a fork was under way,
// or whose holder was killed while starting a command, stays locked for
// that moment — long on a loaded machine. Take waits it out (up to
// OrphanGrace) when the holder the file names is dead or is this process.
package lockfile
