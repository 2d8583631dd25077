#!/usr/bin/perl
#
# make bench: the edge's throughput against the database's own ceiling.
#
# In one run, on one machine, against one PostgreSQL:
#   1. wrk, 64 connections, POSTs N pre-signed unique Stripe events (each
#      a paid event for its own deposit: event row, credit intent, history
#      row, deposit update) to the webhook location;
#   2. wrk, 64 connections, the same nginx answering 200 from a plain
#      location (what nginx alone can do here);
#   3. pgbench, 64 clients, the same ingest() function with the same kind
#      of events (unique, each crediting its own deposit), prepared.
# Prints requests/s, p50/p99, the ratio of 1 to 3, and the nginx workers'
# RSS before and after the N webhook requests.  Figures, not a test.
#
#   BENCH_REQUESTS=200000 BENCH_CONNECTIONS=64 make bench

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex);
use POSIX ();
use Time::HiRes qw(time sleep);

use lib 't/lib';
use Mt5Credit::Sandbox;

$| = 1;

my $N = $ENV{BENCH_REQUESTS} || 200000;
my $C = $ENV{BENCH_CONNECTIONS} || 64;
my $WORKERS = $ENV{BENCH_WORKERS} || 2;
my $POOL = $ENV{BENCH_POOL} || 8;
my $secret = 'whsec_bench_secret';
my $root = $Mt5Credit::Sandbox::ROOT;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my $secrets = $sb->write_file('stripe.secret', "$secret\n");

print "preparing $N + $N deposits ...\n";
# deposits 1..N for the edge, N+1..2N for pgbench, created directly (the
# portal's create_deposit() is not what is measured)
$sb->psql(<<"SQL");
SELECT mt5credit.register_account('bench', 'live1', 9001, 'USD');
INSERT INTO mt5credit.deposit (client_id, idempotency_key, provider,
    mt5_server, mt5_login, amount_minor, currency, account_currency,
    credit_amount_minor)
SELECT 'bench', 'bench-key-' || g, 'stripe', 'live1', 9001, 1000, 'USD',
       'USD', 1000
FROM generate_series(1, 2 * $N) g;
VACUUM ANALYZE;
SQL

sub body {
    my ($tag, $n) = @_;
    my $dep = sprintf('dep_%06d', $n);
    return qq({"id":"evt_${tag}_$n","object":"event","type":)
         . qq("payment_intent.succeeded","data":{"object":{"id":)
         . qq("pi_${tag}_$n","object":"payment_intent","amount":1000,)
         . qq("amount_received":1000,"currency":"usd","status":"succeeded",)
         . qq("metadata":{"deposit_id":"$dep"}}}});
}

print "signing $N webhook deliveries ...\n";
my $file = $sb->dir . '/requests.tsv';
open my $fh, '>', $file or die;
my $t = time;
$t = int($t);
for my $n (1 .. $N) {
    my $body = body('w', $n);
    print $fh "t=$t,v1=" . hmac_sha256_hex("$t.$body", $secret) . "\t$body\n";
}
close $fh;

$sb->start_nginx(<<"HTTP", workers => $WORKERS);
    mt5_credit_postgres "%%PG%%";
    mt5_credit_postgres_pool_size $POOL;
    mt5_credit_postgres_queue 4096;
    access_log off;
    server {
        listen 127.0.0.1:%%PORT%% backlog=4096;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
            mt5_credit_tolerance 1h;
        }
        location = /plain { return 200 "ok\\n"; }
        location = /status { mt5_credit_status; }
    }
HTTP
my $url = 'http://127.0.0.1:' . $sb->nginx_port;

sub worker_rss {
    my $master = $sb->{pids}{nginx};
    my $kb = 0;
    for my $pid (split ' ', `pgrep -P $master`) {
        open my $s, '<', "/proc/$pid/status" or next;
        while (<$s>) { $kb += $1 if /^VmRSS:\s+(\d+)/ }
    }
    return $kb;
}

sub wrk {
    my (@args) = @_;
    return parse_wrk(scalar `wrk @args 2>&1`);
}

sub parse_wrk {
    my ($out) = @_;
    my %r = (raw => $out);
    $r{rps} = $1 if $out =~ /Requests\/sec:\s+([\d.]+)/;
    $r{p50} = $1 if $out =~ /^\s+50%\s+(\S+)/m;
    $r{p99} = $1 if $out =~ /^\s+99%\s+(\S+)/m;
    $r{requests} = $1 if $out =~ /(\d+) requests in/;
    $r{non200} = $1 if $out =~ /non-200 responses: (\d+)/;
    return \%r;
}

# warm a pool connection: a signed non-event reaches ingest() and is
# refused there, storing nothing
$sb->http('POST', '/webhooks/stripe', body => '[]',
          headers => [ [ 'Stripe-Signature', "t=$t,v1="
                         . hmac_sha256_hex("$t.[]", $secret) ] ]);

my $rss0 = worker_rss();
print "webhook: $N unique events, $C connections ...\n";

# wrk sleeps for its whole -d even when every thread has stopped; it is
# interrupted once all N events are committed, and then reports its real
# elapsed time
my $wrk_out = $sb->dir . '/wrk.out';
my $wrk_pid = fork // die;
if ($wrk_pid == 0) {
    open STDOUT, '>', $wrk_out or die;
    open STDERR, '>&', \*STDOUT or die;
    exec 'wrk', '-t2', "-c$C", '-d3600s', '--latency', '--timeout', '30s',
         '-s', "$root/t/bench/webhook.lua", "$url/webhooks/stripe",
         '--', $file, '/webhooks/stripe', 2;
}
my $stored = 0;
my $t0 = time;
while (waitpid($wrk_pid, POSIX::WNOHANG()) == 0) {
    # the edge's own counter: polling a growing table would load the
    # database being measured
    my $status = $sb->http('GET', '/status')->{body};
    $stored = $status =~ /outcome="credit_created"\} (\d+)/ ? $1 : 0;
    last if $stored >= $N || time - $t0 > 3000;
    sleep 0.2;
}
kill 'INT', $wrk_pid;
waitpid($wrk_pid, 0);
my $hook = parse_wrk(do { local (@ARGV, $/) = ($wrk_out); <> });
my $rss1 = worker_rss();

$stored = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                    . "WHERE provider_payment_id LIKE 'pi_w_%'");

print "plain location, 10 s, $C connections ...\n";
my $plain = wrk('-t2', "-c$C", '-d10s', '--latency', "$url/plain");

print "pgbench: $N unique events, $C clients ...\n";
my $per_client = int($N / $C);
my $script = $sb->write_file('ingest.pgbench', <<'PGB');
\set k :k + 1
\set n :client_id * :per_client + :k + :offset
SELECT outcome FROM mt5credit.ingest('stripe', NULL, convert_to(format('{"id":"evt_p_%s","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_p_%s","object":"payment_intent","amount":1000,"amount_received":1000,"currency":"usd","status":"succeeded","metadata":{"deposit_id":"dep_%s"}}}}', :n::text, :n::text, lpad(:n::text, 6, '0')), 'UTF8'), 'stripe', extract(epoch FROM now())::bigint);
PGB
my @pg = $sb->psql_args('edge');
my $pgb = `pgbench -n -M prepared -c $C -j 2 -t $per_client -D k=0 -D per_client=$per_client -D offset=$N -f $script @pg 2>&1`;
my %p;
$p{tps} = $1 if $pgb =~ /tps = ([\d.]+)/;
$p{lat} = $1 if $pgb =~ /latency average = ([\d.]+ ms)/;
$p{failed} = $1 if $pgb =~ /number of failed transactions: (\d+)/;
my $pg_stored = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                          . "WHERE provider_payment_id LIKE 'pi_p_%'");

my $problems = join "\n", $sb->log_problems;
$sb->stop_nginx;

my $cpu = `nproc`; chomp $cpu;
printf "\n%s\n", '=' x 72;
printf "mt5-credit edge benchmark (%s CPUs, nginx %d workers, pool %d/worker)\n",
    $cpu, $WORKERS, $POOL;
printf "%s\n", '=' x 72;
printf "%-34s %12s %10s %10s\n", '', 'req/s', 'p50', 'p99';
printf "%-34s %12.0f %10s %10s\n", "webhook (nginx+module+PG), c=$C",
    $hook->{rps} // 0, $hook->{p50} // '-', $hook->{p99} // '-';
printf "%-34s %12.0f %10s %10s\n", "plain 200 location, c=$C",
    $plain->{rps} // 0, $plain->{p50} // '-', $plain->{p99} // '-';
printf "%-34s %12.0f %10s %10s\n", "pgbench ingest(), c=$C",
    $p{tps} // 0, '', "avg $p{lat}" ;
printf "%s\n", '-' x 72;
printf "webhook / pgbench ratio:        %.2f  (target >= 0.90)\n",
    ($hook->{rps} // 0) / ($p{tps} || 1);
printf "webhook requests: %s, non-200: %s, credits stored: %s\n",
    $hook->{requests} // '?', $hook->{non200} // '?', $stored;
printf "pgbench transactions: %d, failed: %s, credits stored: %s\n",
    $per_client * $C, $p{failed} // 0, $pg_stored;
printf "nginx worker RSS: %d KiB before, %d KiB after %s requests (%+d KiB)\n",
    $rss0, $rss1, $hook->{requests} // '?', $rss1 - $rss0;
print "log problems:\n$problems\n" if $problems;
print "\n(wrk output)\n$hook->{raw}\n" if $ENV{BENCH_VERBOSE};
print "(pgbench output)\n$pgb\n" if $ENV{BENCH_VERBOSE};
