#!/usr/bin/perl
#
# The worker's own metrics served over HTTP (metrics_listen), beside the
# textfile.  Impossible:
#   - a scrape that says something else than the textfile of the same
#     round, or that misses a credit the worker made
#   - an answer in another format than Prometheus' text (0.0.4), or a
#     path or method other than GET/HEAD /metrics answered as if it were
#   - a scraper that connects and says nothing holding the worker up:
#     credits are still made meanwhile, and the next scrape is answered
#   - a request head without end filling memory (cut at 4 KiB: 400)
#   - metrics served off the host (a non-loopback address, or a name to
#     look up, refused at load, naming the key), or two programs given
#     one address
#   - a worker that cannot bind its address crediting anyway, unwatched:
#     it stops at start and says which address and why

use strict;
use warnings;

use File::Path qw(make_path);
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(sleep time);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 72001);

my $port = $sb->free_port;
my $dir = $sb->dir . '/textfile';
make_path($dir);

my $conf = $st->worker_config('m1', metrics_listen => "127.0.0.1:$port",
                              metrics_dir => $dir);
Mt5Credit::Worker::start($sb, 'm1', $conf);
Mt5Credit::Sandbox::wait_port($port, 'the worker\'s metrics');

sub scrape {
    my (%opt) = @_;
    return $sb->http($opt{method} || 'GET', $opt{path} || '/metrics',
                     port => $port, timeout => 20);
}

# samples carry worker="m1" as their first label
sub sample {
    my ($text, $name) = @_;
    $name =~ s/^(\w+)\{/$1\{worker="m1",/
        or $name =~ s/^(\w+)$/$1\{worker="m1"\}/;
    return $text =~ /^\Q$name\E (\S+)$/m ? $1 : undef;
}

my @credits = map { $st->pay(login => 72001, amount => 500 + $_) } 1 .. 2;
$st->wait_status($_, 'done') for @credits;

my $done = 'mt5credit_worker_credits_total{outcome="done"}';
my $r;
ok(Mt5Credit::Worker::wait_for(sub {
       $r = scrape();
       ($r->{status} // 0) == 200 && (sample($r->{body}, $done) // 0) == 2;
   }, 30), 'GET /metrics: both credits made are counted') or diag explain $r;
like($r->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4},
     '... in Prometheus\' text format');
is($r->{headers}{'content-length'}, length $r->{body},
   '... its length said');
my $ep = 'server="live1",endpoint="/api/trade/balance"';
is(sample($r->{body},
          "mt5credit_worker_mt5_request_duration_seconds_count{$ep}"), 2,
   '... with the balance calls\' histogram');
like($r->{body}, qr/^# TYPE mt5credit_worker_mt5_request_duration_seconds histogram$/m,
     '... typed');

# the same round in the textfile: the same numbers (the file may be a
# round later, never earlier, so compare after a quiet moment)
sleep 2.5;
$r = scrape();
my $file = do { local $/; open my $f, '<', "$dir/mt5credit-work-m1.prom"
                                or die "no textfile: $!"; <$f> };
my @keys = grep { !/last_round/ } $r->{body} =~ /^(mt5credit_\S+) /mg;
ok(@keys > 20, 'the scrape has its samples');
is_deeply([ map { sample($file, $_) } @keys ],
          [ map { sample($r->{body}, $_) } @keys ],
          '... and the textfile of the same round says the same');

my $h = scrape(method => 'HEAD');
is($h->{status}, 200, 'HEAD /metrics: 200');
is($h->{body}, '', '... without a body');
my $p = scrape(method => 'POST');
is($p->{status}, 405, 'POST: 405');
is($p->{headers}{allow}, 'GET, HEAD', '... saying what is allowed');
is(scrape(path => '/')->{status}, 404, 'another path: 404');
is(scrape(path => '/metrics?name[]=up')->{status}, 200,
   'parameters (as Prometheus may add) are ignored');

# a head that never ends
my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)
    or die "connect: $!";
print $s 'GET /metrics HTTP/1.1' . ('x' x 5000);
my $raw = '';
while (sysread($s, my $buf, 4096)) { $raw .= $buf }
close $s;
like($raw, qr{^HTTP/1\.1 400 }, 'a request head past 4 KiB: 400');

# a scraper that connects and says nothing
my $silent = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                   PeerPort => $port)
    or die "connect: $!";
my $t0 = time;
my $third = $st->pay(login => 72001, amount => 777);
ok($st->wait_status($third, 'done'),
   'a silent scraper holds the port: the worker still credits');
my $after = scrape();
is($after->{status}, 200, '... and the next scrape is answered');
cmp_ok(time - $t0, '<', 15, '... within the silent one\'s deadline');
close $silent;
ok(Mt5Credit::Worker::wait_for(sub {
       (sample(scrape()->{body}, $done) // 0) == 3 }, 20),
   '... and counts the third credit');

# taken: a second worker on the same address stops at start
my $twin = $st->worker_config('m2', metrics_listen => "127.0.0.1:$port");
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'work', '-c', $twin, '--once');
isnt($rc, 0, 'a worker whose metrics address is taken does not run');
like($out, qr/metrics_listen: 127\.0\.0\.1:$port: Address already in use/,
     '... and says which address, and why');
unlike($out, qr/worker m2 started/, '... before it credits anything');

is(Mt5Credit::Worker::stop($sb, 'm1'), 0, 'TERM: the worker stops, exit 0');
ok(!IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port),
   '... and its port is closed');

# addresses the config refuses, naming the key
for my $case (
    [ { metrics_listen => '0.0.0.0:9464' },
      qr/metrics_listen: 0\.0\.0\.0 is not a loopback address/ ],
    [ { metrics_listen => '10.1.2.3:9464' },
      qr/metrics_listen: 10\.1\.2\.3 is not a loopback address/ ],
    [ { query_metrics_listen => '[2001:db8::1]:9464' },
      qr/query_metrics_listen: 2001:db8::1 is not a loopback address/ ],
    [ { payout_metrics_listen => 'localhost:9464' },
      qr/payout_metrics_listen: "localhost" is not an IP address/ ],
    [ { metrics_listen => '127.0.0.1' },
      qr/metrics_listen: "127\.0\.0\.1": expected <address>:<port>/ ],
    [ { metrics_listen => '127.0.0.1:70000' },
      qr/metrics_listen: "70000": the port must be 1 to 65535/ ],
    [ { metrics_listen => '127.0.0.1:9464',
        payout_metrics_listen => '127.0.0.1:9464' },
      qr/metrics_listen and payout_metrics_listen are both "127\.0\.0\.1:9464"/ ],
) {
    my ($keys, $want) = @$case;
    my $bad = $st->worker_config('bad', %$keys);
    my ($brc, $bout) = Mt5Credit::Worker::run($sb, 'work', '-c', $bad,
                                              '--once');
    isnt($brc, 0, 'refused: ' . join(' ', %$keys));
    like($bout, $want, '... saying why');
}

my $ok6 = $st->worker_config('v6', metrics_listen => '[::1]:' . $sb->free_port);
my ($rc6, $out6) = Mt5Credit::Worker::run($sb, 'work', '-c', $ok6, '--once');
SKIP: {
    skip 'no IPv6 loopback here', 1 if $out6 =~ /Cannot assign requested|Address family not supported/;
    is($rc6, 0, '[::1]:<port> is a loopback address too') or diag $out6;
}

done_testing;
