#!/usr/bin/perl
#
# make bench (worker part): credits per second end to end, and how long a
# paid webhook waits for its MT5 call.
#
# 1. Throughput: N pending credits are made in the database (the edge is
#    measured by edge_bench.pl); W worker processes (1 and 4) drain them
#    against the MT5 simulator over HTTPS with 0 ms and 20 ms added to
#    every request.  Printed beside the bound:
#      min(database rate, sessions / MT5 time per credit)
#    where the database rate is pgbench running the worker's own claim and
#    finish functions at the same concurrency, and the MT5 time per credit
#    is its round trips times the latency: user/get and trade/balance
#    (group/get is cached for group_cache seconds).
# 2. Latency: signed webhooks through nginx, one at a time; the time from
#    sending the webhook to MT5 receiving the balance call (the deal's
#    TimeMsc), with Redis wake-ups and with polling only.
#
#   BENCH_CREDITS=2000 BENCH_LATENCY_SAMPLES=200 make bench
#   BENCH_LATENCIES=20 BENCH_WORKER_PROCESSES=4 BENCH_LATENCY_SAMPLES=0 (one row)

use strict;
use warnings;

use POSIX ();
use Time::HiRes qw(time sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;
use Mt5Credit::Provider;

$| = 1;

my $N = $ENV{BENCH_CREDITS} || 2000;
my $SAMPLES = $ENV{BENCH_LATENCY_SAMPLES} // 100;
my $ROUND_TRIPS = 2;   # user/get, trade/balance (group/get is cached)

# PostgreSQL durable, as production runs (BENCH_FSYNC=off to compare)
my $FSYNC = lc($ENV{BENCH_FSYNC} // 'on') ne 'off';
my $st = Mt5Credit::Stack->new(sim => { fsync => 0 },
                               sandbox => { fsync => $FSYNC });
my $sb = $st->sb;
my $sim = $st->sim;

$st->account(login => 70001);

# deposits and pending credits straight into the tables (as the owner)
sub make_credits {
    my ($n, $tag) = @_;
    $sb->psql(<<"SQL");
WITH d AS (
    INSERT INTO mt5credit.deposit (client_id, idempotency_key, provider,
        mt5_server, mt5_login, amount_minor, currency, account_currency,
        credit_amount_minor)
    SELECT 'alice', 'bench-$tag-' || g, 'stripe', 'live1', 70001, 100, 'USD',
           'USD', 100
    FROM generate_series(1, $n) g
    RETURNING id
)
INSERT INTO mt5credit.mt5_credit (kind, direction, deposit_id, provider,
    provider_payment_id, mt5_server, mt5_login, amount_minor, currency,
    paid_amount_minor, paid_currency)
SELECT 'deposit', 'credit', d.id, 'stripe', 'pi_bench_$tag' || '_' || d.id,
       'live1', 70001, 100, 'USD', 100, 'USD'
FROM d;
ANALYZE mt5credit.mt5_credit;
SQL
}

sub pending { $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                        . "WHERE status IN ('pending', 'claimed')") }

# the database alone: pgbench claiming and finishing credits with the
# worker's functions, $c clients, no MT5 (there are always more pending
# credits than transactions, so every claim gets one)
sub db_rate {
    my ($c) = @_;
    make_credits($N, "db$c");
    my $script = $sb->write_file("claim-$c.pgbench", <<'PGB');
SELECT id, attempts FROM mt5credit.claim_credit('pgbench', 60, '{live1}') \gset
SELECT mt5credit.credit_succeeded(:id, :attempts, 900000000 + :id, 'pgbench', '{}');
PGB
    my @pg = $sb->psql_args('worker');
    my $per = int($N / $c);
    my $out = `pgbench -n -c $c -j $c -t $per -f $script @pg 2>&1`;
    my ($tps) = $out =~ /tps = ([\d.]+)/;
    return $tps || 0;
}

sub drain {
    my ($workers, $latency) = @_;
    $sim->clear_faults;
    $sim->fault(kind => 'latency', ms => $latency, count => 0) if $latency;
    make_credits($N, "w${workers}l$latency");

    my @names = map { "bench$_" } 1 .. $workers;
    $st->start_worker($_, call_timeout => 5, lease => 60,
                      log_level => $ENV{BENCH_WORKER_LOG} || 'warn',
                      poll_interval => 1)
        for @names;
    # polled seldom: each poll is a psql, CPU taken from what is measured
    my $until = time + 3600;
    sleep 0.5 while pending() > 0 && time < $until;
    $st->stop_worker($_) for @names;
    $sim->clear_faults;

    # the drain itself, from the credit histories: first claim to last
    # done (the workers' start and this poll's granularity left out)
    my $elapsed = $sb->sql1(<<"SQL");
SELECT extract(epoch FROM max(h.at) FILTER (WHERE h.to_status = 'done')
                         - min(h.at) FILTER (WHERE h.to_status = 'claimed'))
FROM mt5credit.credit_history h
JOIN mt5credit.mt5_credit c ON c.id = h.credit_id
WHERE c.provider_payment_id LIKE 'pi\\_bench\\_w${workers}l${latency}\\_%'
SQL
    # who made what, from when: a worker that joined late (a session slot
    # found held, a slow login) shows here, not only in the ratio
    my $who = $sb->sql1(<<"SQL");
SELECT string_agg(format('%s %s from +%s s', actor, n, round(t, 1)), ', '
                  ORDER BY actor)
FROM (SELECT h.actor, count(*) AS n,
             extract(epoch FROM min(h.at) - min(min(h.at)) OVER ()) AS t
      FROM mt5credit.credit_history h
      JOIN mt5credit.mt5_credit c ON c.id = h.credit_id
      WHERE c.provider_payment_id LIKE 'pi\\_bench\\_w${workers}l${latency}\\_%'
        AND h.to_status = 'done'
      GROUP BY h.actor) x
SQL
    $who //= "";
    print "  $workers workers at $latency ms, credits done by: $who\n";
    return $N / ($elapsed || 1e9);
}

sub webhook_latency {
    my ($with_redis) = @_;
    my @ms;
    my $conf = $st->start_worker('lat', log_level => 'warn',
                                 poll_interval => 1,
                                 ($with_redis ? () : (redis => '')));
    sleep 1;
    my %sent;
    for my $i (1 .. $SAMPLES) {
        # the deposit exists before the clock starts: only the webhook,
        # the commit, the wake-up, the claim and the checks are measured
        my $dep = $sb->create_deposit(client => 'alice', login => 70001,
                                      amount => 100 + $i);
        my $body = Mt5Credit::Provider::stripe_event(
            deposit => $dep, amount => 100 + $i, pi => "pi_lat_$with_redis$i");
        # at a random point of the poll's second: a sample sent as the
        # last one's credit is done would land just after a poll, always
        sleep rand(1);
        my $t0 = time;
        my $res = $st->webhook($body);
        my ($id) = $res->{body} =~ /"credit":(\d+)/ or next;
        Mt5Credit::Worker::wait_for(sub {
            $st->status_of($id) eq 'done' }, 30);
        $sent{ $st->ref_of($id) } = $t0;
    }
    $st->stop_worker('lat');
    # the deals' times from one read of the simulator's journal: read for
    # each sample, it was 10 s a sample with the drains' deals in it
    my $offset = $sim->control(GET => '/control/time')->{offset_minutes}
                 // 120;
    for my $deal (@{ $sim->ledger->{deals} }) {
        my $t0 = $sent{ $deal->{Comment} // '' } // next;
        push @ms, ($deal->{TimeMsc} / 1000 - $offset * 60 - $t0) * 1000;
    }
    @ms = sort { $a <=> $b } @ms;
    return (0, 0) unless @ms;
    return ($ms[int($#ms * 0.5)], $ms[int($#ms * 0.99)]);
}

# BENCH_LATENCIES=20 BENCH_WORKER_PROCESSES=4: one row of the table alone
my @LATENCIES = map { $_ + 0 } split /,/, $ENV{BENCH_LATENCIES} // '0,20';
my @WORKERS = map { $_ + 0 } split /,/, $ENV{BENCH_WORKER_PROCESSES} // '1,4';
my %db = map { $_ => db_rate($_) } @WORKERS;
my @rows;
for my $latency (@LATENCIES) {
    for my $workers (@WORKERS) {
        my $rate = drain($workers, $latency);
        my $mt5 = $latency ? $workers / ($ROUND_TRIPS * $latency / 1000)
                           : 9e9;
        my $bound = $db{$workers} < $mt5 ? $db{$workers} : $mt5;
        push @rows, [ $latency, $workers, $rate, $db{$workers},
                      $latency ? $mt5 : undef, $bound ];
    }
}
my ($p50r, $p99r) = $SAMPLES ? webhook_latency(1) : (0, 0);
my ($p50p, $p99p) = $SAMPLES ? webhook_latency(0) : (0, 0);

printf "\n%s\n", '=' x 78;
printf "mt5credit worker benchmark (%d credits per run, MT5 simulator over "
       . "HTTPS, fsync %s)\n", $N, $FSYNC ? 'on' : 'off';
printf "%s\n", '=' x 78;
printf "%-8s %-8s %12s %12s %14s %10s %7s\n", 'latency', 'workers',
       'credits/s', 'db rate', 'sessions/lat', 'bound', 'ratio';
for my $r (@rows) {
    printf "%-8s %-8d %12.0f %12.0f %14s %10.0f %7.2f\n", "$r->[0] ms",
           $r->[1], $r->[2], $r->[3],
           defined $r->[4] ? sprintf('%.0f', $r->[4]) : '-', $r->[5],
           $r->[2] / ($r->[5] || 1);
}
printf "%s\n", '-' x 78;
printf "(sessions/lat = workers / (%d MT5 round trips x latency); target "
       . "ratio >= 0.90)\n", $ROUND_TRIPS;
printf "webhook -> MT5 call, %d samples: with Redis p50 %.1f ms, p99 %.1f ms"
       . " (target p50 <= 20 ms)\n", $SAMPLES, $p50r, $p99r;
printf "                                polling only p50 %.1f ms, p99 %.1f ms"
       . " (poll_interval 1 s)\n", $p50p, $p99p;
my @doubles = do {
    my %n;
    $n{ $_->{Comment} }++ for @{ $sim->ledger->{deals} };
    grep { $n{$_} > 1 } keys %n;
};
printf "deals booked twice: %d\n", scalar @doubles;
