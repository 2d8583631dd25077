#!/usr/bin/perl
#
# A TCP relay that can become a black hole, for tests: a network path
# that stops carrying packets without closing anything, as a failed
# switch, a partition or a dropped route does.  While FLAGFILE exists,
# nothing is relayed either way and nothing is closed: bytes already
# sent wait in the kernel's buffers, new connections in the listen queue.
#
#   t/blackhole-proxy.pl LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT FLAGFILE

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;

my ($port, $host, $up_port, $flag) = @ARGV;
die "usage: $0 LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT FLAGFILE\n"
    unless defined $flag;

my $listen = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                   LocalPort => $port, Listen => 64,
                                   ReuseAddr => 1)
    or die "listen on $port: $!\n";
$SIG{TERM} = sub { exit 0 };

my $sel = IO::Select->new($listen);
my %peer;                       # socket -> the other end

while (1) {
    # a black hole reads nothing: what is sent piles up unread
    if (-e $flag) {
        select(undef, undef, undef, 0.05);
        next;
    }
    for my $s ($sel->can_read(0.2)) {
        if ($s == $listen) {
            my $c = $listen->accept or next;
            my $u = IO::Socket::INET->new(PeerAddr => $host,
                                          PeerPort => $up_port)
                or do { close $c; next };
            @peer{ $c, $u } = ($u, $c);
            $sel->add($c, $u);
            next;
        }
        my $n = sysread($s, my $buf, 65536);
        my $o = $peer{$s};
        if (!$n) {
            $sel->remove($s, $o);
            delete @peer{ $s, $o };
            close $s;
            close $o;
            next;
        }
        my $off = 0;
        while ($off < $n) {
            my $w = syswrite($o, $buf, $n - $off, $off);
            last unless defined $w;
            $off += $w;
        }
    }
}
