package Mt5Credit::Command;

# Commands as the root tests (t/root/) run them: no input, everything
# they print, their exit status.  These tests run as root, or as a user
# with passwordless sudo, and have no sandbox (Mt5Credit::Sandbox
# refuses root).

use strict;
use warnings;

use Exporter 'import';

our @EXPORT_OK = qw(run run_as_root as_root installed);

# a command as root: itself when we are, else through sudo (no prompt)
sub as_root {
    return $> == 0 ? @_ : ('sudo', '-n', @_);
}

# runs a command with no input: its exit status and what it printed, its
# standard error included
sub run {
    my (@cmd) = @_;

    my $pid = open(my $fh, '-|') // die "fork: $!";
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT or die;
        open STDIN, '<', '/dev/null' or die;
        exec @cmd or exit 127;
    }

    local $/;
    my $out = <$fh> // '';
    close $fh;

    return ($? >> 8, $out);
}

sub run_as_root { return run(as_root(@_)) }

# a Debian package installed (not only known to dpkg)
sub installed {
    my ($pkg) = @_;
    my $s = `dpkg-query -W -f='\${Status}' $pkg 2>/dev/null`;
    return $s eq 'install ok installed';
}

1;
