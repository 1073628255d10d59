# gridbed's stand-in for HTCondor's test library module of this name, for
# the PRE/POST scripts of HTCondor's DAGMan tests that load it: the few
# helpers those scripts call, with no HTCondor pool behind them.
package CondorUtils;
use strict;
use warnings;
use Exporter 'import';
our @EXPORT = qw(runcmd fullchomp is_windows);

# Runs a shell command; returns its exit status as the library's `runcmd`
# reports it in `{exitcode}`.
sub runcmd {
    my ($cmd) = @_;
    my $rc = system($cmd);
    return { exitcode => $rc >> 8, success => ($rc == 0) };
}

# gridbed runs on Unix: the scripts take their Unix branch (the socket
# server's client, not Windows' appendmsg).
sub is_windows {
    return 0;
}

# Removes a trailing newline, carriage return included.
sub fullchomp {
    my $s = $_[0];
    $s =~ s/[\r\n]+$// if defined $s;
    $_[0] = $s;
    return $s;
}

1;
