#!/usr/bin/perl
#
# make bench: the edge against the database's own limit and against what a
# team would write instead, each figure a ratio to its limit in the same
# run, on one machine, against one PostgreSQL (fsync on, as production
# runs; BENCH_FSYNC=off to see what commits cost).
#
#   edge      wrk, 64 connections, N pre-signed unique paid Stripe events
#             (each for its own deposit) to the webhook location: nginx 2
#             workers x BENCH_POOL (4, the module's default pool size) =
#             8 database connections; the webhooks waiting for one go
#             up to 16 in one statement (mt5_credit_postgres_batch)
#   peer      the same N kind of events to t/bench/peer (Express 5,
#             stripe-node constructEvent, node-postgres), 2 processes x
#             the same pool, calling ingest()
#   pgbench   ingest() itself, as many clients as the edge has
#             connections, prepared, the same kind of events
#   lean      t/bench/lean_ingest.sql: the same writes on plain tables of
#             their own, one event a call, as many clients: the floor
#             under any one-event ingest()
#   guarded   t/bench/lean_guarded.sql: the lean function on copies of
#             ingest()'s tables with their CHECKs, generated columns and
#             indexes (no triggers, no foreign keys): what the constraints
#             cost, apart from the rest
#   batch     ingest_batch() (sql/062), what the edge sends for the
#             webhooks waiting on a connection: BENCH_BATCH_K (16) events
#             per call, as many clients, prepared
#   plain     nginx answering 200 from a plain location
#
# Every load first runs a warm-up of its own (W events, not counted), then
# VACUUM ANALYZE and a CHECKPOINT: what is measured is the steady state,
# with every backend's plans made on tables that have rows, and no
# autovacuum of the deposits just loaded running beside one load only.
#
# Prints rates, latencies, the nginx workers' RSS before and after, and:
#   edge / pgbench   target >= 0.90 (the edge adds nothing to the database)
#   edge / peer      target >= 2.50
#   pgbench / lean   target >= 0.90 (ingest() costs what its writes cost)
#   batch / lean     target >= 0.90: the same events through
#                    ingest_batch(), against the lean function's
#
# Every load runs in BENCH_ROUNDS (3) rounds of N / rounds events, all
# loads side by side in each round; rates are the rounds' medians, and
# each ratio the median of the rounds' ratios.
#
#   BENCH_REQUESTS=50000 BENCH_WARMUP=2000 BENCH_FSYNC=on make bench
#   BENCH_EDGE_BATCH=1: the edge one statement per webhook, as before
#   sql/062; BENCH_POOL=8: 16 connections for every load, as before

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex);
use POSIX ();
use Time::HiRes qw(time sleep);

use lib 't/lib';
use Mt5Credit::Sandbox;

$| = 1;

my $N = $ENV{BENCH_REQUESTS} || 50000;
my $W = $ENV{BENCH_WARMUP} // 2000;
my $C = $ENV{BENCH_CONNECTIONS} || 64;
my $WORKERS = $ENV{BENCH_WORKERS} || 2;
my $POOL = $ENV{BENCH_POOL} || 4;
my $EDGE_BATCH = $ENV{BENCH_EDGE_BATCH} || 16;
my $PGC = $WORKERS * $POOL;
my $ROUNDS = $ENV{BENCH_ROUNDS} || 3;
my $BATCH_K = $ENV{BENCH_BATCH_K} || 16;
my $FSYNC = lc($ENV{BENCH_FSYNC} // 'on') ne 'off';
my $secret = 'whsec_bench_secret';
my $root = $Mt5Credit::Sandbox::ROOT;
my $peer_modules = $ENV{BENCH_PEER_MODULES}
    || "$root/build/bench-peer/node_modules";

# the deposits of each load: its warm-up's, then its own
my %BASE;
{
    my $b = 0;
    for my $load (qw(edge peer pgbench batch lean guarded)) {
        $BASE{$load} = $b;
        $b += $W + $N;
    }
}

my $sb = Mt5Credit::Sandbox->new(fsync => $FSYNC);
$sb->start_postgres;
my $secrets = $sb->write_file('stripe.secret', "$secret\n");

print "preparing deposits: 4 x ", $W + $N, " for ingest(), 2 x ", $W + $N,
      " for the lean functions (fsync ", ($FSYNC ? 'on' : 'off'), ") ...\n";
# created directly (the portal's create_deposit() is not what is measured)
my $total = 4 * ($W + $N);
my $lean_from = $BASE{lean} + 1;
my $lean_to = $BASE{lean} + $W + $N;
$sb->psql(<<"SQL");
SELECT mt5credit.register_account('bench', 'live1', 9001, 'USD');
INSERT INTO mt5credit.deposit (client_id, idempotency_key, provider,
    mt5_server, mt5_login, amount_minor, currency, account_currency,
    credit_amount_minor)
SELECT 'bench', 'bench-key-' || g, 'stripe', 'live1', 9001, 1000, 'USD',
       'USD', 1000
FROM generate_series(1, $total) g;
SQL
for my $f ('lean_ingest.sql', 'lean_guarded.sql') {
    open my $fh, '<', "$root/t/bench/$f" or die "$f: $!";
    local $/;
    $sb->psql(<$fh>);
}
my $guarded_from = $BASE{guarded} + 1;
my $guarded_to = $BASE{guarded} + $W + $N;
$sb->psql(<<"SQL");
INSERT INTO lean.deposit (id, reference, provider, mt5_server, mt5_login,
                          amount_minor, currency, credit_amount_minor)
SELECT g, 'dep_' || lpad(g::text, 6, '0'), 'stripe', 'live1', 9001, 1000,
       'USD', 1000
FROM generate_series($lean_from, $lean_to) g;
INSERT INTO lean_guarded.deposit (id, client_id, idempotency_key, provider,
    mt5_server, mt5_login, amount_minor, currency, account_currency,
    credit_amount_minor)
OVERRIDING SYSTEM VALUE
SELECT g, 'bench', 'bench-key-' || g, 'stripe', 'live1', 9001, 1000, 'USD',
       'USD', 1000
FROM generate_series($guarded_from, $guarded_to) g;
GRANT USAGE ON SCHEMA lean, lean_guarded TO edge;
GRANT ALL ON ALL TABLES IN SCHEMA lean, lean_guarded TO edge;
GRANT ALL ON ALL SEQUENCES IN SCHEMA lean, lean_guarded TO edge;
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

# a wrk request file: deposits from+1 .. from+count, signed now
my $t = int(time);
sub deliveries {
    my ($name, $tag, $from, $count) = @_;
    my $file = $sb->dir . "/$name.tsv";
    open my $fh, '>', $file or die;
    for my $n ($from + 1 .. $from + $count) {
        my $body = body($tag, $n);
        print $fh "t=$t,v1=" . hmac_sha256_hex("$t.$body", $secret)
                  . "\t$body\n";
    }
    close $fh;
    return $file;
}

print "signing deliveries ...\n";
my $per_round = int($N / $ROUNDS);
my %file = (
    edge_warm => deliveries('edge-warm', 'ew', $BASE{edge}, $W),
    peer_warm => deliveries('peer-warm', 'qw', $BASE{peer}, $W),
);
for my $r (0 .. $ROUNDS - 1) {
    $file{"edge$r"} = deliveries("edge-$r", "er$r",
                                 $BASE{edge} + $W + $r * $per_round,
                                 $per_round);
    $file{"peer$r"} = deliveries("peer-$r", "qr$r",
                                 $BASE{peer} + $W + $r * $per_round,
                                 $per_round);
}

$sb->start_nginx(<<"HTTP", workers => $WORKERS);
    mt5_credit_postgres "%%PG%%";
    mt5_credit_postgres_pool_size $POOL;
    mt5_credit_postgres_batch $EDGE_BATCH;
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

# --- the peer ------------------------------------------------------------------

my ($peer_pid, $peer_url, $peer_missing);
if (!-d "$peer_modules/express") {
    $peer_missing = "not installed ($peer_modules: make bench installs it)";
} elsif (!`sh -c 'command -v node'`) {
    $peer_missing = 'no node';
} else {
    my $port = Mt5Credit::Sandbox::free_port();
    $peer_pid = fork // die;
    if ($peer_pid == 0) {
        POSIX::setsid();
        open STDOUT, '>', $sb->dir . '/peer.log' or die;
        open STDERR, '>&', \*STDOUT or die;
        $ENV{NODE_PATH} = $peer_modules;
        $ENV{PEER_PORT} = $port;
        $ENV{PEER_PROCESSES} = $WORKERS;
        $ENV{PEER_POOL} = $POOL;
        $ENV{PEER_SECRET_FILE} = $secrets;
        $ENV{PGHOST} = '127.0.0.1';
        $ENV{PGPORT} = $sb->pg_port;
        $ENV{PGUSER} = 'edge';
        $ENV{PGDATABASE} = 'mt5credit';
        exec 'node', "$root/t/bench/peer/server.js";
    }
    Mt5Credit::Sandbox::wait_port($port, 'the peer');
    $peer_url = "http://127.0.0.1:$port";
}

# --- the loads -----------------------------------------------------------------

sub worker_rss {
    my $master = $sb->{pids}{nginx};
    my $kb = 0;
    for my $pid (split ' ', `pgrep -P $master`) {
        open my $s, '<', "/proc/$pid/status" or next;
        while (<$s>) { $kb += $1 if /^VmRSS:\s+(\d+)/ }
    }
    return $kb;
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

# events stored so far: the event table's sequence, read without loading
# the tables being written
sub events_stored {
    return $sb->sql1('SELECT CASE WHEN is_called THEN last_value ELSE 0 END '
                     . 'FROM mt5credit.webhook_event_id_seq');
}

# wrk sleeps for its whole -d even when every thread has stopped: it is
# interrupted once all of the file's events are stored, and then reports
# its real elapsed time
sub post_all {
    my ($base, $file, $count) = @_;
    my $out = $sb->dir . '/wrk.out';
    my $goal = events_stored() + $count;
    my $pid = fork // die;
    if ($pid == 0) {
        open STDOUT, '>', $out or die;
        open STDERR, '>&', \*STDOUT or die;
        exec 'wrk', '-t2', "-c$C", '-d3600s', '--latency', '--timeout',
             '30s', '-s', "$root/t/bench/webhook.lua",
             "$base/webhooks/stripe", '--', $file, '/webhooks/stripe', 2;
    }
    my $t0 = time;
    while (waitpid($pid, POSIX::WNOHANG()) == 0) {
        last if events_stored() >= $goal || time - $t0 > 3000;
        sleep 0.2;
    }
    kill 'INT', $pid;
    waitpid($pid, 0);
    return parse_wrk(do { local (@ARGV, $/) = ($out); <> });
}

# WAL written so far, in bytes: what a transaction logs, full pages too
sub wal_bytes {
    return $sb->sql1("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')");
}

# the SQL of a paid event's body for deposit number $n (a pgbench
# variable, or a column of generate_series)
sub body_sql {
    my ($n) = @_;
    return q[format('{"id":"evt_%s_%s","object":"event","type":]
        . q["payment_intent.succeeded","data":{"object":{"id":"pi_%s_%s",]
        . q["object":"payment_intent","amount":1000,"amount_received":1000,]
        . q["currency":"usd","status":"succeeded","metadata":]
        . qq[{"deposit_id":"dep_%s"}}}}', :tag::text, $n\::text, :tag::text, ]
        . qq[$n\::text, lpad($n\::text, 6, '0'))];
}

# a load of $per transactions for each of $PGC clients, $k events each
# (deposits from+1 .. from+count): rates in events per second
my $pgbench_n = 0;
sub pgbench {
    my ($which, $from, $count) = @_;
    my $k = $which eq 'batch' ? $BATCH_K : 1;
    my $per = int($count / $PGC / $k) || 1;
    my $sql;
    if ($which eq 'batch') {
        # the edge's arrays: provider, event id, body, scheme, signature
        # time, request id
        my $g = "generate_series(:n - $k + 1, :n) g";
        $sql = "\\set n ((:client_id) * :per + :k) * $k + :from\n"
            . 'SELECT count(*) FILTER (WHERE outcome = \'credit_created\') '
            . "FROM mt5credit.ingest_batch(array_fill('stripe'::text, "
            . "ARRAY[$k]), array_fill(NULL::text, ARRAY[$k]), "
            . 'ARRAY(SELECT convert_to(' . body_sql('g') . ", 'UTF8') "
            . "FROM $g), array_fill('stripe'::text, ARRAY[$k]), "
            . "array_fill(extract(epoch FROM now())::bigint, ARRAY[$k]), "
            . "array_fill(NULL::text, ARRAY[$k]));";
    } elsif ($which eq 'ingest') {
        $sql = "\\set n (:client_id) * :per + :k + :from\n"
            . q{SELECT outcome FROM mt5credit.ingest('stripe', NULL, }
            . 'convert_to(' . body_sql(':n') . q{, 'UTF8'), 'stripe', }
            . q{extract(epoch FROM now())::bigint, NULL);};
    } else {
        $sql = "\\set n (:client_id) * :per + :k + :from\n"
            . "SELECT $which.ingest('stripe', convert_to(" . body_sql(':n')
            . q{, 'UTF8'), extract(epoch FROM now())::bigint);};
    }
    my $script = $sb->write_file('load-' . ++$pgbench_n . '.pgbench',
                                 "\\set k :k + 1\n$sql\n");
    my $tag = "p$pgbench_n";
    my @pg = $sb->psql_args('edge');
    my $lsn0 = wal_bytes();
    my $out = `pgbench -n -M prepared -c $PGC -j 2 -t $per -D k=0 -D per=$per -D from=$from -D tag=$tag -f $script @pg 2>&1`;
    my $events = $per * $PGC * $k;
    my %p = (raw => $out, transactions => $events, tag => $tag,
             wal => (wal_bytes() - $lsn0) / $events);
    $p{tps} = $1 * $k if $out =~ /tps = ([\d.]+)/;
    $p{lat} = $1 if $out =~ /latency average = ([\d.]+ ms)/;
    $p{failed} = $1 if $out =~ /number of failed transactions: (\d+)/;
    return \%p;
}

# the edge's statements sent and webhooks sent in batches, so far
sub edge_statements {
    my $body = $sb->http('GET', '/status')->{body};
    my ($st) = $body =~ /^mt5credit_pg_statements_total (\d+)$/m;
    my ($ba) = $body =~ /^mt5credit_pg_batched_total (\d+)$/m;
    return ($st // 0, $ba // 0);
}

# before each load: nothing left for autovacuum to do on its clock, plans
# made on counted tables, and every dirty page flushed
sub settle { $sb->psql('VACUUM ANALYZE; CHECKPOINT;') }

# warm a pool connection: a signed non-event reaches ingest() and is
# refused there, storing nothing
$sb->http('POST', '/webhooks/stripe', body => '[]',
          headers => [ [ 'Stripe-Signature', "t=$t,v1="
                         . hmac_sha256_hex("$t.[]", $secret) ] ]);

if ($W) {
    print "warm-up: $W events through each load ...\n";
    post_all($url, $file{edge_warm}, $W);
    post_all($peer_url, $file{peer_warm}, $W) if $peer_url;
    pgbench('ingest', $BASE{pgbench}, $W);
    pgbench('lean', $BASE{lean}, $W);
    pgbench('lean_guarded', $BASE{guarded}, $W);
    pgbench('batch', $BASE{batch}, $W);
}

print "plain location, 10 s, $C connections ...\n";
my $plain = parse_wrk(scalar `wrk -t2 -c$C -d10s --latency $url/plain 2>&1`);

# every load in BENCH_ROUNDS rounds, one after the other in each: this
# box's speed drifts between minutes, and loads measured side by side
# drift less (the medians are printed, and the median of the rounds'
# ratios)
my %round;
my $rss0 = worker_rss();
for my $r (0 .. $ROUNDS - 1) {
    my $of = sprintf '%d events (round %d of %d)', $per_round, $r + 1,
                     $ROUNDS;
    settle();
    print "edge: $of, $C connections ...\n";
    my ($st0, $ba0) = edge_statements();
    my $e = post_all($url, $file{"edge$r"}, $per_round);
    my ($st1, $ba1) = edge_statements();
    $e->{tps} = $e->{rps};
    $e->{statements} = $st1 - $st0;
    $e->{batched} = $ba1 - $ba0;
    push @{ $round{edge} }, $e;

    if ($peer_url) {
        settle();
        print "peer: $of, $C connections ...\n";
        my $q = post_all($peer_url, $file{"peer$r"}, $per_round);
        $q->{tps} = $q->{rps};
        push @{ $round{peer} }, $q;
    }

    for my $load (['ingest', 'pgbench'], ['lean', 'lean'],
                  ['lean_guarded', 'guarded'], ['batch', 'batch']) {
        my ($fn, $base) = @$load;
        settle();
        print "$fn: $of, $PGC clients ...\n";
        push @{ $round{$fn} },
            pgbench($fn, $BASE{$base} + $W + $r * $per_round, $per_round);
    }
}
my $rss1 = worker_rss();
my $stored = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                       . "WHERE provider_payment_id LIKE 'pi\\_er%'");

sub median {
    my @v = sort { $a <=> $b } @_;
    return @v ? $v[$#v / 2] : 0;
}

# a load's figures over its rounds: medians, counts summed
sub summary {
    my ($runs) = @_;
    my %m = (tps => median(map { $_->{tps} // 0 } @$runs),
             wal => median(map { $_->{wal} // 0 } @$runs),
             transactions => 0, failed => 0,
             tags => [ map { $_->{tag} } @$runs ],
             raw => join("\n", map { $_->{raw} } @$runs));
    $m{lat} = median(map { ($_->{lat} // '') =~ /([\d.]+)/ ? $1 : 0 }
                     @$runs) . ' ms';
    for (@$runs) {
        $m{transactions} += $_->{transactions};
        $m{failed} += $_->{failed} // 0;
    }
    return \%m;
}
# wrk's figures over the rounds: medians, requests summed
sub wrk_summary {
    my ($runs) = @_;
    return undef unless $runs;
    my %m = (rps => median(map { $_->{rps} // 0 } @$runs),
             raw => join("\n", map { $_->{raw} } @$runs));
    for my $k (qw(p50 p99)) {
        # wrk prints a unit: the median of the values in ms
        $m{$k} = sprintf '%.2fms', median(map {
            my ($v, $u) = ($_->{$k} // '0ms') =~ /([\d.]+)(\w+)/;
            $v * ($u eq 's' ? 1000 : $u eq 'us' ? 0.001 : 1) } @$runs);
    }
    $m{requests} += $_->{requests} // 0 for @$runs;
    $m{non200} += $_->{non200} // 0 for @$runs;
    return \%m;
}
my $hook = wrk_summary($round{edge});
my $peer = wrk_summary($round{peer});
my $pg = summary($round{ingest});
my $lean = summary($round{lean});
my $guarded = summary($round{lean_guarded});
my $batch = summary($round{batch});

# the median of the rounds' ratios
sub round_ratio {
    my ($x, $y) = @_;
    return median(map { ($round{$x}[$_]{tps} // 0)
                        / ($round{$y}[$_]{tps} || 1e9) } 0 .. $ROUNDS - 1);
}

sub stored {
    my ($table, $tags) = @_;
    return $sb->sql1("SELECT count(*) FROM $table WHERE "
        . join(' OR ', map { "provider_payment_id LIKE 'pi\\_$_\\_%'" }
                       @$tags));
}
my $pg_stored = stored('mt5credit.mt5_credit', $pg->{tags});
my $lean_stored = stored('lean.credit', $lean->{tags});
my $batch_stored = stored('mt5credit.mt5_credit', $batch->{tags});

my $problems = join "\n", $sb->log_problems;
$sb->stop_nginx;
kill 'TERM', -$peer_pid if $peer_pid;

my $cpu = `nproc`; chomp $cpu;
printf "\n%s\n", '=' x 76;
printf "mt5-credit edge benchmark (%s CPUs, fsync %s, nginx %d workers x "
       . "pool %d)\n", $cpu, $FSYNC ? 'on' : 'off', $WORKERS, $POOL;
printf "%s\n", '=' x 76;
printf "%-40s %10s %10s %10s\n", '', 'per s', 'p50', 'p99';
printf "%-40s %10.0f %10s %10s\n", "edge (nginx + module), c=$C",
    $hook->{rps} // 0, $hook->{p50} // '-', $hook->{p99} // '-';
if ($peer) {
    printf "%-40s %10.0f %10s %10s\n",
        "peer (Express + stripe-node + pg), c=$C",
        $peer->{rps} // 0, $peer->{p50} // '-', $peer->{p99} // '-';
} else {
    printf "%-40s %10s\n", 'peer', $peer_missing // 'not run';
}
for my $r (["pgbench ingest(), c=$PGC", $pg],
           ["lean function, same writes, c=$PGC", $lean],
           ["lean, ingest()'s constraints, c=$PGC", $guarded],
           ["pgbench ingest_batch(), $BATCH_K per call, c=$PGC", $batch]) {
    printf "%-40s %10.0f %10s   WAL %5.0f B/event\n", $r->[0],
        $r->[1]{tps} // 0, "avg $r->[1]{lat}", $r->[1]{wal} // 0;
}
printf "%-40s %10.0f %10s %10s\n", "nginx return 200, c=$C",
    $plain->{rps} // 0, $plain->{p50} // '-', $plain->{p99} // '-';
printf "%s\n", '-' x 76;
printf "edge / pgbench    %5.2f   (target >= 0.90; ingest(), one event a "
       . "call)\n", round_ratio('edge', 'ingest');
printf "edge / pgbench ingest_batch()  %5.2f   (what the edge sends under "
       . "load)\n", round_ratio('edge', 'batch');
printf "edge / peer       %5s   (target >= 2.50)\n",
    $peer ? sprintf('%.2f', round_ratio('edge', 'peer')) : '-';
printf "pgbench / lean    %5.2f   (target >= 0.90; ingest(), one event a "
       . "call)\n", round_ratio('ingest', 'lean');
printf "pgbench ingest_batch() / lean   %5.2f   (target >= 0.90; %d events "
       . "a call)\n", round_ratio('batch', 'lean'), $BATCH_K;
printf "pgbench / lean with ingest()'s constraints  %5.2f   (what the rest "
       . "costs)\n", round_ratio('ingest', 'lean_guarded');
printf "lean with constraints / lean                %5.2f   (what the "
       . "constraints cost)\n", round_ratio('lean_guarded', 'lean');
printf "%s\n", '-' x 76;
printf "edge: %s requests, non-200: %s, credits stored: %s of %d\n",
    $hook->{requests} // '?', $hook->{non200} // '?', $stored,
    $per_round * $ROUNDS;
{
    my ($st, $ba) = (0, 0);
    $st += $_->{statements} // 0 for @{ $round{edge} };
    $ba += $_->{batched} // 0 for @{ $round{edge} };
    printf "edge: %d statements, %d webhooks of them in batches "
           . "(mt5_credit_postgres_batch %d, pool %d)\n", $st, $ba,
           $EDGE_BATCH, $POOL;
}
printf "peer: %s requests, non-200: %s\n",
    $peer->{requests} // '?', $peer->{non200} // '?' if $peer;
printf "pgbench: %d transactions, failed: %s, credits stored: %s\n",
    $pg->{transactions}, $pg->{failed} // 0, $pg_stored;
printf "lean: %d transactions, failed: %s, credits stored: %s\n",
    $lean->{transactions}, $lean->{failed} // 0, $lean_stored;
printf "ingest_batch(): %d events, failed calls: %s, credits stored: %s\n",
    $batch->{transactions}, $batch->{failed} // 0, $batch_stored;
printf "nginx worker RSS: %d KiB before, %d KiB after %s requests (%+d KiB)\n",
    $rss0, $rss1, $hook->{requests} // '?', $rss1 - $rss0;
print "log problems:\n$problems\n" if $problems;
if ($ENV{BENCH_VERBOSE}) {
    print "\n(edge wrk)\n$hook->{raw}\n";
    print "(peer wrk)\n$peer->{raw}\n" if $peer;
    print "(pgbench ingest)\n$pg->{raw}\n(pgbench lean)\n$lean->{raw}\n";
    print "(pgbench lean_guarded)\n$guarded->{raw}\n";
    print "(pgbench ingest_batch)\n$batch->{raw}\n";
}
