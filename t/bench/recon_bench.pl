#!/usr/bin/perl
#
# make bench (reconciliation part): one day with a million rows on each
# side, a few thousand of them planted mismatches, 10% of them in transit
# across days (sql/040); wall time and peak memory of `mt5credit
# reconcile`, and of the PostgreSQL backend serving it.  Target: <= 60 s
# and <= 256 MB on the 2-core box.
#
#   settlement  N Stripe charge rows, 24 payouts: N - T of the day's
#               credits and T of the day before's; the lost webhooks are
#               rows of a week ago, carried in transit until today
#   credits     N done deposit credits of the day, T = N/10 of the day
#               before, carried in transit by that day's run (their deals
#               are asked for by ticket); the day's last T wait in transit
#               in turn.  Bulk-loaded (no triggers: the history is not
#               what is measured)
#   deals       N balance deals in the simulator's journal, over L logins,
#               server time UTC+2, fetched with get_total + get_page
#   planted     lost webhooks, deal amount off, credit without deal,
#               unknown reference, duplicate deal, deal without reference
#
#   BENCH_RECON_ROWS=1000000 BENCH_RECON_LOGINS=2000 make bench

use strict;
use warnings;

use POSIX qw(strftime);
use Time::HiRes qw(time sleep);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Worker;

$| = 1;

my $N = $ENV{BENCH_RECON_ROWS} || 1_000_000;
my $L = $ENV{BENCH_RECON_LOGINS} || 2000;
my %PLANT = (lost => 1000, amount => 1000, nodeal => 500, unknown => 500,
             duplicate => 500, noref => 500);
my $OFFSET = 120 * 60;              # the simulator's server time, UTC+2
my $T = int($N / 10);               # in transit from the day before

# PostgreSQL durable, as production runs (BENCH_FSYNC=off to compare)
my $sb = Mt5Credit::Sandbox->new(
    fsync => lc($ENV{BENCH_FSYNC} // 'on') ne 'off');
$sb->start_postgres;
my $dir = $sb->dir;

# BENCH_RECON_EXPLAIN=1: every statement of the run over 200 ms, with its
# plan, in pg.log (auto_explain), to see where the time goes
if ($ENV{BENCH_RECON_EXPLAIN}) {
    $sb->psql("LOAD 'auto_explain';"
        . "ALTER SYSTEM SET session_preload_libraries = 'auto_explain';"
        . "ALTER SYSTEM SET auto_explain.log_min_duration = '200ms';"
        . "ALTER SYSTEM SET auto_explain.log_nested_statements = on;"
        . "ALTER SYSTEM SET auto_explain.log_analyze = off;"
        . "SELECT pg_reload_conf();");
}

# yesterday, UTC: the whole day is in the past
my $ws = int(time / 86400) * 86400 - 86400;
my $day = strftime('%Y-%m-%d', gmtime $ws);
my $step = 86000 / $N;

sub amount { 1000 + ($_[0] % 97) * 100 }
sub login  { 80000 + $_[0] % $L }
sub at     { $ws + 10 + int($_[0] * $step) }
# the day before's credits are N+1 .. N+T
sub at_prev  { $ws - 86400 + 10 + int(($_[0] - $N) * 86000 / $T) }

my %nodeal = map { ($_ * 997) % $N + 1 => 1 } 1 .. $PLANT{nodeal};
my %off = map { ($_ * 991 + 7) % $N + 1 => 1 } 1 .. $PLANT{amount};
my %dup = map { ($_ * 983 + 13) % $N + 1 => 1 } 1 .. $PLANT{duplicate};
# what must be found, kind by kind (a credit hit twice counts once)
my %expect = (
    settled_not_credited   => $PLANT{lost},
    credit_without_deal    => scalar(keys %nodeal),
    deal_duplicate         => scalar(grep { !$nodeal{$_} } keys %dup),
    # a duplicate and a wrong amount on one reference are two findings
    amount_mismatch        => scalar(grep { !$nodeal{$_} } keys %off),
    deal_unknown_reference => $PLANT{unknown},
    deal_without_reference => $PLANT{noref},
);
my $planted = 0;
$planted += $_ for values %expect;

printf "reconciliation benchmark: %d rows a side, %d logins, %d planted "
     . "mismatches, %d in transit from the day before and %d into the next, "
     . "day %s\n", $N, $L, $planted, $T, $T, $day;

# --- the database: N done credits ----------------------------------------

my $t0 = time;
$sb->psql(<<"SQL");
SET session_replication_role = replica;
INSERT INTO mt5credit.client_account (client_id, mt5_server, mt5_login,
                                      currency)
SELECT 'bench', 'live1', 80000 + g, 'USD' FROM generate_series(0, $L - 1) g;

INSERT INTO mt5credit.deposit (id, client_id, idempotency_key, provider,
    mt5_server, mt5_login, amount_minor, currency, account_currency,
    credit_amount_minor, status, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT i, 'bench', 'bench-key-' || i, 'stripe', 'live1', 80000 + i % $L,
       1000 + (i % 97) * 100, 'USD', 'USD', 1000 + (i % 97) * 100,
       'succeeded', to_timestamp($ws + 10 + floor(i * $step)),
       to_timestamp($ws + 10 + floor(i * $step))
FROM generate_series(1, $N) i;

-- numbered references (reference_form 1, as before 066): the planted
-- deals below name credits by their number
INSERT INTO mt5credit.mt5_credit (id, kind, direction, deposit_id, provider,
    provider_payment_id, mt5_server, mt5_login, amount_minor, currency,
    paid_amount_minor, paid_currency, status, mt5_deal_ticket, attempts,
    reference_form, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT i, 'deposit', 'credit', i, 'stripe', 'pi_bench_' || i, 'live1',
       80000 + i % $L, 1000 + (i % 97) * 100, 'USD', 1000 + (i % 97) * 100,
       'USD', 'done', 1000000 + i, 1, 1,
       to_timestamp($ws + 10 + floor(i * $step)),
       to_timestamp($ws + 10 + floor(i * $step))
FROM generate_series(1, $N) i;

-- the day before: T more, done, carried in transit by that day's run
INSERT INTO mt5credit.deposit (id, client_id, idempotency_key, provider,
    mt5_server, mt5_login, amount_minor, currency, account_currency,
    credit_amount_minor, status, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT i, 'bench', 'bench-key-' || i, 'stripe', 'live1', 80000 + i % $L,
       1000 + (i % 97) * 100, 'USD', 'USD', 1000 + (i % 97) * 100,
       'succeeded', to_timestamp($ws - 86400 + 10 + floor((i - $N) * 86000.0 / $T)),
       to_timestamp($ws - 86400 + 10 + floor((i - $N) * 86000.0 / $T))
FROM generate_series($N + 1, $N + $T) i;

INSERT INTO mt5credit.mt5_credit (id, kind, direction, deposit_id, provider,
    provider_payment_id, mt5_server, mt5_login, amount_minor, currency,
    paid_amount_minor, paid_currency, status, mt5_deal_ticket, attempts,
    reference_form, created_at, updated_at)
OVERRIDING SYSTEM VALUE
SELECT i, 'deposit', 'credit', i, 'stripe', 'pi_bench_' || i, 'live1',
       80000 + i % $L, 1000 + (i % 97) * 100, 'USD', 1000 + (i % 97) * 100,
       'USD', 'done', 1000000 + i, 1, 1,
       to_timestamp($ws - 86400 + 10 + floor((i - $N) * 86000.0 / $T)),
       to_timestamp($ws - 86400 + 10 + floor((i - $N) * 86000.0 / $T))
FROM generate_series($N + 1, $N + $T) i;

WITH prev AS (
    INSERT INTO mt5credit.recon_run (provider, business_day, time_zone,
        currency, window_start, window_end, deal_window_end,
        settlement_format, settlement_sha256, verdict, input_digest,
        finished_at)
    VALUES ('stripe', '$day'::date - 1, 'UTC', 'USD',
            to_timestamp($ws - 86400), to_timestamp($ws), to_timestamp($ws),
            'stripe', repeat('0', 64), 'reconciled', 'bench', now())
    RETURNING id)
INSERT INTO mt5credit.recon_transit_credit
SELECT prev.id, i, '$day'::date - 1, prev.id, 0, 'payment', 'dep:' || i,
       'done', 1000 + (i % 97) * 100, 'USD'
FROM prev, generate_series($N + 1, $N + $T) i;

-- lost webhooks: settled a week ago, carried since, never credited: past
-- the window today, each a break
INSERT INTO mt5credit.recon_transit_settlement
SELECT r.id, r.id, '$day'::date - 7, r.id, 6, 'txn_lost' || i, i,
       'payment', 'pi_lost_' || i, 'pi_lost_' || i, NULL, 'USD', 4200, 0,
       4200, to_timestamp($ws - 7 * 86400 + 100 + i), 'po_lost'
FROM (SELECT max(id) AS id FROM mt5credit.recon_run) r,
     generate_series(1, $PLANT{lost}) i;

ANALYZE mt5credit.mt5_credit;
ANALYZE mt5credit.deposit;
SQL
printf "  loaded %d credits in %.1f s\n", $N + $T, time - $t0;

# --- the simulator: N deals in its journal --------------------------------

$t0 = time;
my $sim = Mt5Credit::Mt5Sim->new($sb, fsync => 0, start => 0, config => {
    accounts => [ map { { login => 80000 + $_, group => 'real\\usd',
                          balance => '0.00' } } 0 .. $L - 1 ],
});
# tickets ascending, as the journal must have them: a credit's deal is
# 1000000 + its id (its mt5_deal_ticket), the planted extras come after
my $ticket = 1000000 + $N + $T;
my $deals = 0;
open my $j, '>', $sim->state_dir . '/journal.jsonl' or die $!;
sub deal {
    my ($tk, $login, $minor, $comment, $t) = @_;
    $deals++;
    print $j qq({"op":"deal","ticket":$tk,"login":$login,"dealer":)
        . Mt5Credit::Mt5Sim::manager()
        . qq(,"action":2,"digits":2,"amount":) . ($minor * 1000000)
        . qq(,"time_msc":) . (($t + $OFFSET) * 1000)
        . qq(,"comment":"$comment"}\n);
}
for my $i (1 .. $N) {
    deal(1000000 + $i, login($i), amount($i) + ($off{$i} ? 1 : 0), "dep:$i",
         at($i) + 2) unless $nodeal{$i};
}
deal(1000000 + $_, login($_), amount($_), "dep:$_", at_prev($_) + 2)
    for $N + 1 .. $N + $T;
for my $i (1 .. $N) {
    deal(++$ticket, login($i), amount($i), "dep:$i", at($i) + 3)
        if $dup{$i} && !$nodeal{$i};
    if ($i % int($N / $PLANT{unknown}) == 0) {
        deal(++$ticket, login($i), 5000, 'dep:' . (10_000_000 + $i),
             at($i) + 4);
    }
    if ($i % int($N / $PLANT{noref}) == 1) {
        deal(++$ticket, login($i), 2500, 'bonus', at($i) + 5);
    }
}
close $j;
$sim->start;
printf "  simulator replayed %d deals in %.1f s\n", $deals, time - $t0;

# --- the settlement file and its control totals --------------------------

$t0 = time;
my $csv = "$dir/settlement.csv";
my %payout;
open my $f, '>', $csv or die $!;
print $f "balance_transaction_id,created_utc,currency,gross,fee,net,"
       . "reporting_category,source_id,payment_intent_id,"
       . "automatic_payout_id,payment_metadata[deposit_id]\n";
sub settle {
    my ($id, $pi, $minor, $t) = @_;
    my $fee = int($minor * 29 / 1000) + 30;
    my $po = 'po_bench_' . int(($t - $ws) / 3600);
    $payout{$po} += $minor - $fee;
    printf $f "txn_%s,%s,usd,%d.%02d,%d.%02d,%d.%02d,charge,ch_%s,%s,%s,\n",
        $id, strftime('%Y-%m-%d %H:%M:%S', gmtime $t),
        $minor / 100, $minor % 100, $fee / 100, $fee % 100,
        ($minor - $fee) / 100, ($minor - $fee) % 100, $id, $pi, $po;
}
settle($_, "pi_bench_$_", amount($_), at($_)) for 1 .. $N - $T;
settle($_, "pi_bench_$_", amount($_), at(($_ - $N) * 10 - 5))
    for $N + 1 .. $N + $T;
close $f;
my $control = $sb->write_file('control.csv', "payout_id,currency,amount\n"
    . join('', map { sprintf "%s,usd,%d.%02d\n", $_, $payout{$_} / 100,
                             $payout{$_} % 100 } sort keys %payout));
printf "  settlement file: %.0f MB in %.1f s\n", (-s $csv) / 1e6, time - $t0;

# --- the run ---------------------------------------------------------------

my $conf = Mt5Credit::Worker::config($sb, 'recon',
    servers => [ [ 'live1', $sim, recon_groups => 'real\\usd' ] ],
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
        . ' dbname=mt5credit user=recon application_name=recon-bench"',
    recon_out => $dir, call_timeout => 60, lease => 200,
    recon_sessions => $ENV{BENCH_RECON_SESSIONS} || 2,
    # unpaced: this measures the run itself (production's default is 50
    # requests a second per server, recon_rate)
    recon_rate => $ENV{BENCH_RECON_RATE} // 0);

# CPU seconds of a process so far (user + system)
sub cpu_of {
    my ($p) = @_;
    open my $s, '<', "/proc/$p/stat" or return 0;
    my @f = split ' ', (<$s> =~ s/^.*\) //r);
    return ($f[11] + $f[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}
my $sim_cpu0 = cpu_of($sim->pid);
my @times0 = times;

# the setup's writes flushed now, not on the run's clock: with fsync on,
# a checkpoint of the million rows just loaded would land inside it
$sb->psql('CHECKPOINT');

my ($backend_hwm, $client_hwm) = (0, 0);
$t0 = time;
my $pid = fork // die;
if (!$pid) {
    open STDOUT, '>', "$dir/recon.out";
    open STDERR, '>&', \*STDOUT;
    my @perf = $ENV{BENCH_RECON_PERF}
        ? ('perf', 'record', '-g', '-o', "$dir/perf.data") : ();
    exec @perf, $Mt5Credit::Worker::BIN, 'reconcile', '-c', $conf, '--provider',
        'stripe', '--day', $day, '--tz', 'UTC', '--currency', 'USD',
        '--format', 'stripe', '--settlement', $csv, '--control', $control;
    exit 127;
}

# peak resident set (the kernel's), and resident private memory (sampled:
# a backend's RSS also counts the shared buffers it touched)
sub hwm { status_kb($_[0], 'VmHWM') }
sub anon { status_kb($_[0], 'RssAnon') }
sub status_kb {
    my ($p, $field) = @_;
    open my $s, '<', "/proc/$p/status" or return 0;
    while (<$s>) { return $1 * 1024 if /^$field:\s+(\d+) kB/ }
    return 0;
}
my $backend_anon = 0;

my $backend;
while (waitpid($pid, POSIX::WNOHANG()) == 0) {
    my $h = hwm($pid);
    $client_hwm = $h if $h > $client_hwm;
    $backend //= $sb->sql1("SELECT pid FROM pg_stat_activity "
                           . "WHERE application_name = 'recon-bench'");
    if ($backend) {
        $h = hwm($backend);
        $backend_hwm = $h if $h > $backend_hwm;
        $h = anon($backend);
        $backend_anon = $h if $h > $backend_anon;
    }
    sleep 0.2;
}
my $rc = $? >> 8;
my $wall = time - $t0;
my @times1 = times;
my $client_cpu = ($times1[2] + $times1[3]) - ($times0[2] + $times0[3]);
my $sim_cpu = cpu_of($sim->pid) - $sim_cpu0;

open my $o, '<', "$dir/recon.out" or die $!;
my $out = do { local $/; <$o> };
print $out =~ s/^/    /mgr if $rc != 1;
die "reconcile exited $rc (expected 1: breaks)\n" if $rc != 1;

my ($run) = $out =~ /^run (\d+):/m;
my %kinds = map { $_->[0] => $_->[1] } @{ $sb->psql(
    "SELECT kind, count(*) FROM mt5credit.recon_item WHERE run_id = $run "
    . "GROUP BY kind ORDER BY kind") };
my $found = 0;
$found += $_ for values %kinds;

printf "  reconcile: %.1f s wall, %.2f of the 60 s limit (target <= 1.00); "
     . "CPU: mt5credit %.1f s, MT5 simulator %.1f s\n", $wall, $wall / 60,
     $client_cpu, $sim_cpu;
printf "  peak memory (target <= 256 MB): mt5credit %.0f MB; its PostgreSQL "
     . "backend %.0f MB resident, of which %.0f MB its own (the rest: shared "
     . "buffers it touched)\n", $client_hwm / 1048576,
     $backend_hwm / 1048576, $backend_anon / 1048576;
print "  $1\n" while $out =~ /INFO (reconcile run \d+: .*)$/mg;
printf "  mismatches found %d of %d planted: %s\n", $found, $planted,
    join(', ', map { "$_ $kinds{$_}" } sort keys %kinds);
my %sum = map { $_->[0] => $_->[1] } @{ $sb->psql(
    "SELECT name, n FROM mt5credit.recon_count WHERE run_id = $run "
    . "AND dimension = 'summary'") };
printf "  across days: %d matched later (carried from the day before), %d "
     . "deals asked for by ticket, %d in transit to the next day\n",
    $sum{matched_later}, $sum{deals_by_ticket}, $sum{in_transit};
for my $k (qw(matched_later deals_by_ticket in_transit)) {
    die "$k: $sum{$k}, expected $T\n" if $sum{$k} != $T;
}
for my $k (sort keys %expect) {
    die "$k: found " . ($kinds{$k} // 0) . ", planted $expect{$k}\n"
        if ($kinds{$k} // 0) != $expect{$k};
}
die "found $found mismatches, planted $planted\n" if $found != $planted;
