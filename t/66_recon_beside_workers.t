#!/usr/bin/perl
#
# Reconciliation during trading hours, beside the workers, on the same
# MT5 server (issue 17 §4).  `sessions` is the cap of Web API sessions
# for the workers and reconciliation together: each session holds one of
# the server's slots (batch/lib/mc_slots.h).  Impossible:
#   - more sessions open on the server than its cap, with workers making
#     deals while a reconciliation fetches deals beside them
#   - a reconciliation taking more slots than are free: it runs with what
#     it gets, and says so
#   - a reconciliation with no free slot opening a session anyway: it
#     waits recon_slot_wait, then gives up incomplete, saying why
#   - a worker started while a run holds the last slot never serving the
#     server: it takes the slot once the run gives it back
#   - a run's requests outpacing recon_rate (the test reads the least
#     time its requests can have taken: a floor, never a speed goal)
#   - status hiding how fresh reconciliation is (sql/048)

use strict;
use warnings;

use POSIX qw(strftime WNOHANG);
use Test::More;
use Time::HiRes qw(sleep time);
use Time::Local qw(timegm);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Settlement;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

my @logins = map { 70600 + $_ } 1 .. 10;
$st->account(login => $_) for @logins;

my $day = strftime('%Y-%m-%d', gmtime);
my $recon_db = '"host=127.0.0.1 port=' . $sb->pg_port
             . ' dbname=mt5credit user=recon"';

sub conf {
    my ($name, $cap, %opt) = @_;
    return Mt5Credit::Worker::config($sb, $name,
        servers => [ [ 'live1', $sim, sessions => $cap,
                       recon_groups => 'real\\usd' ] ],
        recon_database => $recon_db, recon_out => $sb->dir,
        recon_match_window => 0, %opt);
}

# the provider's side: a charge for every deposit credited so far, with
# its payout's control totals, so a run is complete
sub settlement {
    my $seq = 0;
    my @rows = map { { id => 'txn_' . ++$seq, category => 'charge',
                       pi => $_->[0], gross => $_->[1], deposit => $_->[2],
                       at => time - 60 } }
               @{ $sb->psql("SELECT c.provider_payment_id, c.amount_minor, "
                            . "d.reference FROM mt5credit.mt5_credit c JOIN "
                            . "mt5credit.deposit d ON d.id = c.deposit_id "
                            . "WHERE c.kind = 'deposit' ORDER BY c.id") };
    return ($sb->write_file('settlement.csv',
                            Mt5Credit::Settlement::stripe_csv(\@rows)),
            $sb->write_file('control.csv',
                            Mt5Credit::Settlement::control_csv(\@rows)));
}

sub reconcile {
    my ($conf) = @_;
    my ($file, $control) = settlement();
    my $t0 = time;
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
        '--provider', 'stripe', '--day', $day, '--tz', 'UTC',
        '--currency', 'USD', '--format', 'stripe', '--settlement', $file,
        '--control', $control);
    return ($rc, $out, time - $t0);
}

sub requests {
    my $eps = $sim->stats->{endpoints};
    my $n = 0;
    $n += $eps->{$_}{requests} for keys %$eps;
    return $n;
}

sub slow_balance {
    $sim->fault(kind => 'latency', ms => $_[0], endpoint => '/api/trade/balance',
                count => 0);
}

# a deposit on each login, made, so reconciliation has deals to fetch
my @credits = map { $st->pay(login => $_, amount => 1000) } @logins;
my $w0 = conf('w0', 4);
Mt5Credit::Worker::start($sb, 'w0', $w0);
ok(Mt5Credit::Worker::wait_for(sub {
       !grep { $st->status_of($_) ne 'done' } @credits }, 60),
   'ten credits made');
Mt5Credit::Worker::stop($sb, 'w0');

# --- two workers hold both slots of a cap of 2: no slot for the run ------------

my $cap2 = conf('w1', 2, recon_slot_wait => 2);
Mt5Credit::Worker::start($sb, 'w1', $cap2);
Mt5Credit::Worker::start($sb, 'w2', conf('w2', 2));
ok(Mt5Credit::Worker::wait_for(sub {
       Mt5Credit::Worker::log_of($sb, 'w1') =~ /session slot \d of 2/
       && Mt5Credit::Worker::log_of($sb, 'w2') =~ /session slot \d of 2/ }, 20),
   'two workers, each with one of live1\'s two slots');
$sim->reset_stats;
my ($rc, $out, $took) = reconcile($cap2);
is($rc, 3, 'a reconciliation with no free slot ends incomplete (exit 3)')
    or diag $out;
like($out, qr/no Web API session slot free in 2 s: all 2 are held/,
     '... after waiting recon_slot_wait, saying why');
cmp_ok($sim->stats->{sessions_authenticated_max}, '<=', 2,
       '... and opened no session beside the workers\' two');
unlike($out, qr/authentication|time\/server/, '... nor tried');
Mt5Credit::Worker::stop($sb, $_) for qw(w1 w2);

# --- cap 3, two busy workers: the run gets the one slot left --------------------------

my $cap3 = conf('r3', 3, recon_sessions => 2, recon_rate => 0);
Mt5Credit::Worker::start($sb, 'w3', conf('w3', 3));
Mt5Credit::Worker::start($sb, 'w4', conf('w4', 3));
ok(Mt5Credit::Worker::wait_for(sub {
       Mt5Credit::Worker::log_of($sb, 'w3') =~ /session slot \d of 3/
       && Mt5Credit::Worker::log_of($sb, 'w4') =~ /session slot \d of 3/ }, 20),
   'two workers on a cap of 3');
slow_balance(300);
my @more = map { $st->pay(login => $logins[$_ % 10], amount => 2000 + $_) }
           1 .. 12;
sleep 0.5;
$sim->reset_stats;
($rc, $out) = reconcile($cap3);
ok($rc == 0 || $rc == 1, 'the reconciliation runs beside them (exit '
   . "$rc: reconciled or breaks)") or diag $out;
like($out, qr/live1: 1 of its 3 session slots \(asked for 2\)/,
     '... with the one slot free, saying it asked for two');
ok(Mt5Credit::Worker::wait_for(sub {
       !grep { $st->status_of($_) ne 'done' } @more }, 60),
   'the workers made their credits meanwhile');
my $max = $sim->stats->{sessions_authenticated_max};
cmp_ok($max, '<=', 3, "at most 3 sessions were ever open on live1 ($max): "
       . 'workers and reconciliation within the cap');
cmp_ok($max, '>=', 2, '... (the high-water mark saw the workers)');
$sim->clear_faults;

# --- a worker started while the run holds the last slot ---------------------------------

Mt5Credit::Worker::stop($sb, 'w4');
my $slow = conf('r4', 2, recon_sessions => 1, recon_rate => 2);
my ($s2, $c2) = settlement();
my $pid = $sb->spawn('recon-slow', $Mt5Credit::Worker::BIN, 'reconcile',
    '-c', $slow, '--provider', 'stripe', '--day', $day, '--tz', 'UTC',
    '--currency', 'USD', '--format', 'stripe', '--settlement', $s2,
    '--control', $c2);
# w3 keeps its slot of 3; on a cap of 2 a new worker and the run share
Mt5Credit::Worker::stop($sb, 'w3');
sleep 1;
Mt5Credit::Worker::start($sb, 'w5', conf('w5', 2));
Mt5Credit::Worker::start($sb, 'w6', conf('w6', 2));
ok(Mt5Credit::Worker::wait_for(sub {
       (Mt5Credit::Worker::log_of($sb, 'w5')
        . Mt5Credit::Worker::log_of($sb, 'w6'))
       =~ /all 2 session slots are held by others/ }, 20),
   'a worker finds the last slot held by the run, and says so');
my $ended;
ok(Mt5Credit::Worker::wait_for(sub {
       $ended //= waitpid($pid, WNOHANG) == $pid ? $? >> 8 : undef;
       defined $ended }, 60), 'the slow run ends');
ok(defined $ended && ($ended == 0 || $ended == 1), '... complete (exit '
   . ($ended // '?') . ')');
ok(Mt5Credit::Worker::wait_for(sub {
       my $l = Mt5Credit::Worker::log_of($sb, 'w5')
             . Mt5Credit::Worker::log_of($sb, 'w6');
       (my @got = $l =~ /session slot \d of 2/g) >= 2 }, 20),
   'both workers hold a slot once the run gave its back');
my $late = $st->pay(login => $logins[0], amount => 3333);
ok($st->wait_status($late, 'done', 20), '... and credits are made');
Mt5Credit::Worker::stop($sb, $_) for qw(w5 w6);

# --- the run's pace ---------------------------------------------------------------------

my $paced = conf('r5', 4, recon_rate => 10);
$sim->reset_stats;
($rc, $out, $took) = reconcile($paced);
ok($rc == 0 || $rc == 1, 'a run at recon_rate = 10') or diag $out;
my $n = requests();
cmp_ok($n, '>=', 10, "it made $n requests");
cmp_ok($took, '>=', ($n - 1) / 10 * 0.9,
       sprintf('... over %.1f s: no faster than 10 a second', $took));

my $free = conf('r6', 4, recon_rate => 0);
$sim->reset_stats;
($rc, $out, $took) = reconcile($free);
like($out, qr/requests not paced \(recon_rate = 0\)/,
     'recon_rate = 0: unbounded, and said');

# --- how fresh it is, for the "not reconciled" alert (sql/048) ----------------------

($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--prometheus',
    '--database', 'host=127.0.0.1 port=' . $sb->pg_port
                  . ' dbname=mt5credit user=worker');
is($rc, 0, 'status --prometheus') or diag $out;
my ($success) = $out =~ /^mt5credit_recon_last_success_timestamp_seconds\{provider="stripe",currency="USD"\} (\d+)$/m;
ok($success && abs($success - time) < 120,
   'mt5credit_recon_last_success_timestamp_seconds: the last run, just now');
my ($y, $m, $d) = split /-/, $day;
my $midnight = timegm(0, 0, 0, $d, $m - 1, $y);    # the day reconciled
like($out, qr/^mt5credit_recon_last_day_timestamp_seconds\{provider="stripe",currency="USD"\} $midnight$/m,
     'mt5credit_recon_last_day_timestamp_seconds: the start of the day compared');
my ($took_db) = $out =~ /^mt5credit_recon_last_run_duration_seconds\{provider="stripe",currency="USD",verdict="(?:reconciled|breaks)"\} ([\d.]+)$/m;
ok(defined $took_db && $took_db > 0,
   'mt5credit_recon_last_run_duration_seconds, with the verdict: the run\'s '
   . 'own time (' . ($took_db // '?') . ' s), not 0 (a run is one '
   . 'transaction, and now() would be its start)');
($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database',
    'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=worker');
like($out, qr/^  stripe USD: last day \d{4}-\d\d-\d\d; last run (?:reconciled|breaks) in [\d.]+ s$/m,
     '... and in the table');

done_testing;
