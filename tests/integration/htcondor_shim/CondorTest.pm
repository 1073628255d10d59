# gridbed's stand-in for HTCondor's test library module of this name, for
# the PRE/POST scripts of HTCondor's DAGMan tests that load it: its
# `debug` only (the rest needs an HTCondor pool, which such a test cannot
# have in gridbed).
package CondorTest;
use strict;
use warnings;
use CondorUtils;

# Writes a debugging message to standard error.
sub debug {
    my ($msg) = @_;
    print STDERR $msg;
    return 1;
}

1;
