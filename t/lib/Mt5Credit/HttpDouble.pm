package Mt5Credit::HttpDouble;

# What the provider doubles in t/ share (t/stripesim/, t/payoutsim/): a
# loopback HTTP server answering each connection in a child of its own,
# JSON answers, a book of what the provider holds kept in a file under a
# lock (children share it), and faults read from a file on every request,
# so a test changes them between two calls.

use strict;
use warnings;

use Exporter qw(import);
use Fcntl qw(:flock);
use IO::Socket::INET;
use JSON::PP;

our @EXPORT_OK = qw(serve reply read_body form locked faults);

my $json = JSON::PP->new->canonical;

# accepts on 127.0.0.1:$port for ever; $answer->($conn) in a child each
sub serve {
    my ($port, $name, $answer) = @_;
    my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1',
                                    LocalPort => $port, Listen => 16,
                                    ReuseAddr => 1)
        or die "listen 127.0.0.1:$port: $!";
    $SIG{CHLD} = 'IGNORE';
    print "$name: listening on $port\n";
    while (my $c = $srv->accept) {
        my $pid = fork;
        if (defined $pid && $pid == 0) {
            $answer->($c);
            exit 0;
        }
        close $c;
    }
}

sub reply {
    my ($c, $status, $body) = @_;
    my $text = $json->encode($body);
    print $c "HTTP/1.1 $status X\r\nContent-Type: application/json\r\n"
           . "Content-Length: " . length($text) . "\r\nConnection: close\r\n"
           . "\r\n$text";
    close $c;
}

sub read_body {
    my ($c, $length) = @_;
    my $text = '';
    read($c, $text, $length) if $length;
    return $text;
}

# a form-encoded body (or query string) as a hash
sub form {
    my ($text) = @_;
    my %f;
    for (split /&/, $text // '') {
        my ($k, $v) = map { my $x = $_ // ''; $x =~ tr/+/ /;
                            $x =~ s/%([0-9A-Fa-f]{2})/chr hex $1/ge; $x }
                      split /=/, $_, 2;
        $f{$k} = $v;
    }
    return \%f;
}

# runs $fn on the book in $file (or $empty) under a lock, writes it back;
# returns $fn's value
sub locked {
    my ($file, $empty, $fn) = @_;
    open my $lock, '>>', "$file.lock" or die $!;
    flock $lock, LOCK_EX or die $!;
    my $book = $empty;
    if (open my $f, '<', $file) {
        local $/;
        $book = $json->decode(<$f>);
    }
    my $out = $fn->($book);
    open my $f, '>', "$file.tmp" or die $!;
    print $f $json->encode($book);
    close $f;
    rename "$file.tmp", $file or die $!;
    close $lock;
    return $out;
}

sub faults {
    my ($file) = @_;
    open my $f, '<', $file or return {};
    local $/;
    return eval { $json->decode(<$f>) } || {};
}

1;
