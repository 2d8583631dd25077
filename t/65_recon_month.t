#!/usr/bin/perl
#
# A planted month of reconciliation across days (sql/040): 30 consecutive
# business days in Europe/London, 2026-03-10 to 2026-04-08, one run a day
# in order, the way the timer runs them.  Card payments settle one to
# three days after they are made; two refunds settle either side of
# midnight from their debit; a webhook outage moves two credits past
# midnight and past their settlement; the day London's summer time begins
# (2026-03-29, 23 hours) is the day the MT5 server's offset steps from
# UTC+2 to UTC+3 (Europe/Riga).  Planted: a credit never settled, a
# settlement never credited, a settled amount that differs, a second deal
# on another login, a dealer's deal near midnight on the DST day, and an
# event stored before its deposit existed.  Impossible:
#   - a timing difference inside the window reported as a break: every
#     day's run reports exactly its planted findings, nothing else
#   - an unpaired item past the window staying quiet, or breaking early:
#     the credit never settled breaks on day 7 after its day, not day 6
#   - a settled row nobody credited waiting the window: it breaks the day
#     after its own, once its grace (24 hours, sql/067) is over, and is
#     carried, overdue, not in transit, until the window ends
#   - a carried item left unmatched when its partner comes: the earlier
#     run's item is recorded as matched later, by the run that matched it
#   - a refund the file names otherwise than the webhook, settled on
#     another day than its debit, left unpaired
#   - a credit done on an earlier day read as "without deal" on its
#     settlement day: its deal is asked for by ticket
#   - a duplicate hiding a wrong login: both are findings
#   - the DST day's deals falling on the wrong day
#   - a settled payment with a stored event left uncredited: the run
#     replays the event and records it
#   - a re-run of any day writing anything

use strict;
use warnings;

use Test::More;
use Time::Local qw(timegm);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Settlement;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

# the simulator's clock now is Riga's in December
$sim->set_offset(120);
$st->account(login => $_) for 76501 .. 76504;

my $conf = Mt5Credit::Worker::config($sb, 'recon',
    servers => [ [ 'live1', $sim, recon_groups => 'real\\usd',
                   time_zone => 'Europe/Riga' ] ],
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    recon_out => $sb->dir, call_timeout => 3, lease => 20);

# --- the calendar ----------------------------------------------------

my $DAYS = 30;
my $DST = timegm(0, 0, 1, 29, 2, 2026);    # 01:00 UTC: both zones move
my $DAY0 = timegm(0, 0, 0, 10, 2, 2026);
my @day = map { my @t = gmtime($DAY0 + $_ * 86400);
                sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]) }
          0 .. $DAYS - 1;
my $DST_DAY = 19;
is($day[$DST_DAY], '2026-03-29', 'day 19 is the day summer time begins');

# UTC seconds of a London wall-clock time on day i (never in the gap)
sub london {
    my ($i, $hm) = @_;
    my ($h, $m) = split /:/, $hm;
    my $t = $DAY0 + $i * 86400 + $h * 3600 + $m * 60;
    return $t >= $DST + 3600 ? $t - 3600 : $t;
}

# the MT5 server's wall clock for a UTC moment
sub riga { $_[0] + ($_[0] >= $DST ? 3 : 2) * 3600 }

# --- the records, planted --------------------------------------------

my (%rows, %credit, %expect, %later);
my $seq = 0;

sub ingest {
    my ($body) = @_;
    my $q = $body =~ s/'/''/gr;
    my $r = $sb->psql("SELECT outcome, coalesce(credit_id, 0) FROM "
                      . "mt5credit.ingest('stripe', NULL, convert_to('$q', "
                      . "'UTF8'), 'stripe', NULL)", user => 'edge');
    return $r->[0][1];
}

# the worker's work, back-dated: the deal made at $deal (UTC), the credit
# row made at $at
sub done {
    my ($id, $login, $signed, $ref, $at, $deal) = @_;
    my $ticket = $sim->manual_deal(login => $login,
                                   amount => Mt5Credit::Settlement::major($signed),
                                   comment => $ref, time => riga($deal));
    $sb->psql(<<"SQL");
SET session_replication_role = replica;
UPDATE mt5credit.mt5_credit
SET status = 'done', attempts = 1, mt5_deal_ticket = $ticket,
    claimed_at = to_timestamp($at), claimed_by = 'fixture',
    lease_expires_at = to_timestamp($at) + interval '1 minute',
    created_at = to_timestamp($at), updated_at = to_timestamp($deal)
WHERE id = $id;
SQL
    return $ticket;
}

sub reference { $sb->sql1("SELECT reference FROM mt5credit.mt5_credit "
                          . "WHERE id = $_[0]") }

# a payment made at $at (UTC) on $login, credited at $credited
sub payment {
    my ($name, $login, $amount, $at, $credited) = @_;
    my $pi = "pi_month_$name";
    my $dep = $sb->create_deposit(client => 'alice', login => $login,
                                  amount => $amount);
    my $id = ingest(stripe_event(deposit => $dep, amount => $amount,
                                 pi => $pi));
    my $ref = reference($id);
    my $ticket = done($id, $login, $amount, $ref, $credited, $credited + 60);
    $credit{$name} = { id => $id, ref => $ref, pi => $pi, login => $login,
                       amount => $amount, ticket => $ticket };
    return $credit{$name};
}

sub settle {
    my ($i, %r) = @_;
    push @{ $rows{$i} }, { id => 'txn_' . ++$seq, fee => 0,
                           payout => "po_$i", %r };
}

sub finding { push @{ $expect{ $_[0] } }, "$_[1] $_[2]" }

# three payments a day, settled 1..3 days later
my %settles;
for my $i (0 .. $DAYS - 1) {
    for my $k (0 .. 2) {
        my $name = "p${i}_$k";
        my $at = london($i, (qw(09:00 15:00 23:40))[$k]);
        my $c = payment($name, 76501 + ($i + $k) % 3, 10000 + 100 * $i + $k,
                        $at, $at + 120);
        my $s = $i + 1 + ($i + $k) % 3;
        next if $name eq 'p2_0';            # never settled
        $settles{$name} = $s;
        next if $s >= $DAYS;
        settle($s, category => 'charge', pi => $c->{pi},
               source => "ch_month_$name",
               gross => $c->{amount} + ($name eq 'p8_2' ? 1 : 0),
               fee => 30, at => london($s, '06:00') + 60 * ($i * 3 + $k));
        push @{ $later{$s} }, "credit $c->{ref}";
    }
}

# planted: a credit never settled, a break 7 days after its day
finding(9, 'credited_not_settled', $credit{p2_0}{ref});

# planted: the settled amount is one cent more
finding($settles{p8_2}, 'amount_mismatch', $credit{p8_2}{ref});
is($settles{p8_2}, 10, 'the amount mismatch is settled on day 10');

# planted: a settlement nobody credited (a lost webhook, no event): 13
# hours old at day 5's end, 37 at day 6's, past the grace of 24
settle(5, category => 'charge', pi => 'pi_month_lost', source => 'ch_lost',
       gross => 7700, at => london(5, '11:00'), id => 'txn_lost');
finding(6, 'settled_not_credited', 'settlement:txn_lost');

# planted: a second deal with p22_1's reference, on another login
$sim->manual_deal(login => 76504,
                  amount => Mt5Credit::Settlement::major($credit{p22_1}{amount}),
                  comment => $credit{p22_1}{ref},
                  time => riga(london(22, '15:10')));
finding(22, 'deal_duplicate', $credit{p22_1}{ref});
finding(22, 'login_mismatch', $credit{p22_1}{ref});

# planted: a dealer's bonus at 23:50 on the DST day (01:50 the next day
# on the server's clock): that day's, not the next
my $bonus = $sim->manual_deal(login => 76501, amount => '5.00',
                              comment => 'bonus',
                              time => riga(london($DST_DAY, '23:50')));
finding($DST_DAY, 'deal_without_reference', "deal:live1:$bonus");

# the webhook outage: two payments of day 15's evening, credited after
# 00:30 on day 17, settled on day 16 (a day before their credits).  o1's
# credit is made after day 16's run, as it happens when runs keep up: its
# row waits in transit and is matched on day 17.  o2's exists before
# (day 16 run late): paired ahead on day 16, not counted again on day 17.
sub outage_payment {
    my ($name, $hm) = @_;
    payment($name, 76502, 4000, london(15, $hm), london(17, '00:30'));
}
for my $o ([ o1 => '22:00' ], [ o2 => '23:30' ]) {
    settle(16, category => 'charge', pi => "pi_month_$o->[0]",
           source => "ch_month_$o->[0]", gross => 4000,
           at => london(16, '07:00'), id => "txn_out_$o->[0]");
}
outage_payment(o2 => '23:30');
push @{ $later{17} }, 'settlement txn_out_o1';

# refund 1: debited on day 6 at 23:50, settled on day 7 at 00:10; the
# webhook carries only the cumulative amount, the file names re_...
sub refund {
    my ($of, $amount, $at) = @_;
    my $id = ingest(stripe_event(type => 'charge.refunded',
                                 pi => $credit{$of}{pi}, amount => $amount,
                                 charge => "ch_month_$of"));
    my $ref = reference($id);
    done($id, $credit{$of}{login}, -$amount, $ref, $at, $at + 60);
    return $ref;
}

my $r1 = refund('p3_1', 1000, london(6, '23:50'));
settle(7, category => 'refund', pi => $credit{p3_1}{pi}, source => 're_r1',
       gross => -1000, at => london(7, '00:10'), id => 'txn_re_r1');
push @{ $later{7} }, "credit $r1";

# refund 2: settled on day 12 at 23:55, debited on day 13 at 00:05
settle(12, category => 'refund', pi => $credit{p10_0}{pi},
       source => 're_r2', gross => -500, at => london(12, '23:55'),
       id => 'txn_re_r2');
my $r2 = refund('p10_0', 500, london(13, '00:05'));
push @{ $later{13} }, 'settlement txn_re_r2';

# an event stored before its deposit existed (a case holds it); settled
# on day 25: the run replays it, and the credit is in flight at cut-off
my $next = $sb->sql1("SELECT 'dep_' || lpad((coalesce(max(id), 0) + 1)"
                     . "::text, 6, '0') FROM mt5credit.deposit");
my $early = ingest(stripe_event(id => 'evt_month_early', deposit => $next,
                                amount => 6600, pi => 'pi_month_early'));
is($early, 0, 'the early event made no credit');
is($sb->create_deposit(client => 'alice', login => 76503, amount => 6600),
   $next, 'its deposit exists afterwards');
settle(25, category => 'charge', pi => 'pi_month_early', source => 'ch_early',
       gross => 6600, at => london(25, '10:00'), id => 'txn_early');

# every day's file: the payments it settled and a fee, in one payout
sub files {
    my ($i) = @_;
    my @r = (@{ $rows{$i} || [] },
             { id => "txn_fee_$i", category => 'fee', gross => -100,
               fee => 0, at => london($i, '12:00'), payout => "po_$i" });
    return ($sb->write_file("settle-$i.csv",
                            Mt5Credit::Settlement::stripe_csv(\@r)),
            $sb->write_file("control-$i.csv",
                            Mt5Credit::Settlement::control_csv(\@r)));
}

sub reconcile {
    my ($i) = @_;
    my ($csv, $control) = files($i);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
        '--provider', 'stripe', '--day', $day[$i], '--tz', 'Europe/London',
        '--currency', 'USD', '--format', 'stripe', '--settlement', $csv,
        '--control', $control);
    my ($run) = $out =~ /^run (\d+):/m;
    return ($rc, $out, $run // 0);
}

sub items_of {
    my ($run) = @_;
    return join ', ', map { "$_->[0] $_->[1]" } @{ $sb->psql(
        "SELECT kind, item_key FROM mt5credit.recon_item WHERE run_id = "
        . "$run ORDER BY kind, item_key") };
}

sub count_of {
    my ($run, $name) = @_;
    return $sb->sql1("SELECT n FROM mt5credit.recon_count WHERE run_id = "
                     . "$run AND dimension = 'summary' AND name = '$name'")
        // 0;
}

sub later_of {
    my ($run) = @_;
    return join ', ', map { "$_->[0] $_->[1]" } @{ $sb->psql(
        "SELECT side, item_key FROM mt5credit.recon_matched_later "
        . "WHERE run_id = $run ORDER BY side, item_key") };
}

# --- thirty runs, one a day ------------------------------------------


my %run;
for my $i (0 .. $DAYS - 1) {
    my ($rc, $out, $run) = reconcile($i);
    $run{$i} = $run;
    outage_payment(o1 => '22:00') if $i == 16;
    # the run's own replay made this credit: pending at its cut-off
    finding(25, 'open_at_cutoff', $sb->sql1(
        "SELECT reference FROM mt5credit.mt5_credit "
        . "WHERE provider_payment_id = 'pi_month_early'")) if $i == 25;
    my $want = join ', ', sort @{ $expect{$i} || [] };
    is(items_of($run), $want, "day $i ($day[$i]): "
       . ($want eq '' ? 'nothing to report' : "exactly $want"))
        or diag $out;
    my $breaks = grep { !/^open_at_cutoff/ } @{ $expect{$i} || [] };
    is($rc, $breaks ? 1 : 0, "day $i: exit " . ($breaks ? 1 : 0));
    is(later_of($run), join(', ', sort @{ $later{$i} || [] }),
       "day $i: what earlier runs carried and this one matched");
}

# --- what the days say -----------------------------------------------

is($sb->sql1("SELECT age_days FROM mt5credit.recon_transit_credit "
             . "WHERE run_id = $run{8} AND credit_id = $credit{p2_0}{id}"),
   6, 'the unsettled credit is in transit on day 8, 6 days old');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_transit_credit "
             . "WHERE run_id = $run{9} AND credit_id = $credit{p2_0}{id}"),
   0, '... and on day 9 a break, no longer carried');
is($sb->sql1("SELECT age_days || ' ' || overdue FROM "
             . "mt5credit.recon_transit_settlement "
             . "WHERE run_id = $run{5} AND row_id = 'txn_lost'"),
   '0 false', 'the uncredited row is in transit on its own day 5');
is($sb->sql1("SELECT age_days || ' ' || overdue FROM "
             . "mt5credit.recon_transit_settlement "
             . "WHERE run_id = $run{11} AND row_id = 'txn_lost'"),
   '6 true', '... a break on day 6, carried overdue (not in transit) on day '
   . '11, 6 days old, for a late credit');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_transit_settlement "
             . "WHERE run_id = $run{12} AND row_id = 'txn_lost'"), 0,
   '... and no longer carried past the window, on day 12');
is($sb->sql1("SELECT first_run_id FROM mt5credit.recon_matched_later "
             . "WHERE run_id = $run{7} AND item_key = '$r1'"), $run{6},
   'refund 1 was first seen by day 6\'s run, matched by day 7\'s');
is($sb->sql1("SELECT age_days FROM mt5credit.recon_transit_settlement "
             . "WHERE run_id = $run{16} AND row_id = 'txn_out_o1'"), 0,
   'the outage row whose credit did not exist yet waits on day 16');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_paired_ahead "
             . "WHERE run_id = $run{16} AND credit_id = $credit{o2}{id}"), 1,
   'the one whose credit existed was paired ahead by day 16\'s run');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_transit_credit "
             . "WHERE run_id = $run{17} AND credit_id = $credit{o2}{id}"), 0,
   '... and day 17 does not take it for unsettled');

my $pending_end = grep { $settles{$_} >= $DAYS } keys %settles;
is(count_of($run{29}, 'in_transit'), $pending_end,
   "day 29: the $pending_end payments settling after the month are in "
   . 'transit');
my $by_ticket = 0;
$by_ticket += count_of($run{$_}, 'deals_by_ticket') for 0 .. $DAYS - 1;
ok($by_ticket >= 70, "earlier days' deals were asked for by ticket "
   . "($by_ticket)");

my $replay = $sb->psql("SELECT outcome, recon_run_id, replayed_by FROM "
    . "mt5credit.webhook_event_replay r JOIN mt5credit.webhook_event e "
    . "ON e.id = r.event_id WHERE e.provider_event_id = 'evt_month_early'");
is(scalar @$replay, 1, 'the early event was replayed once');
is_deeply([ @{ $replay->[0] }[0, 1] ], [ 'credit_created', $run{25} ],
          '... by day 25\'s run, which made its credit');
is(count_of($run{25}, 'replayed'), 1, '... and counted it');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE "
             . "provider_payment_id = 'pi_month_early'"), 1,
   'one credit for it');

my $html = do { local $/; open my $f, '<', glob("$sb->{dir}/recon-stripe-"
                . "$day[8]-USD-run$run{8}.html") or die $!; <$f> };
like($html, qr/<tr class="transit" data-side="credit" data-age="6">.*?\Q$credit{p2_0}{ref}\E/s,
     "day 8's report shows the unsettled credit in transit, 6 days old");
like($html, qr/data-name="in_transit"><th>in transit/,
     '... and counts what is in transit');

# --- every day again: nothing new ------------------------------------

my $before = $sb->sql1("SELECT (SELECT count(*) FROM mt5credit.recon_run) "
    . "|| '/' || (SELECT count(*) FROM mt5credit.recon_item) || '/' || "
    . "(SELECT count(*) FROM mt5credit.case) || '/' || (SELECT count(*) "
    . "FROM mt5credit.webhook_event_replay)");
my @changed;
for my $i (0 .. $DAYS - 1) {
    my ($rc, $out) = reconcile($i);
    push @changed, $i unless $out =~ /nothing new written/;
}
# o1's credit came after day 16's run: day 16 has another input now (it
# pairs o1 ahead), and so has day 17 (o1's row is no longer carried)
is("@changed", '16 17', 'every day re-run: only days 16 and 17, whose '
   . 'inputs changed since, are new runs');
$before = $sb->sql1("SELECT (SELECT count(*) FROM mt5credit.recon_run) "
    . "|| '/' || (SELECT count(*) FROM mt5credit.recon_item) || '/' || "
    . "(SELECT count(*) FROM mt5credit.case) || '/' || (SELECT count(*) "
    . "FROM mt5credit.webhook_event_replay)");
my $same = 0;
for my $i (0 .. $DAYS - 1) {
    my ($rc, $out) = reconcile($i);
    $same++ if $out =~ /nothing new written/;
}
is($same, $DAYS, 'every day again: the inputs are its run\'s, nothing new');
is($sb->sql1("SELECT (SELECT count(*) FROM mt5credit.recon_run) "
    . "|| '/' || (SELECT count(*) FROM mt5credit.recon_item) || '/' || "
    . "(SELECT count(*) FROM mt5credit.case) || '/' || (SELECT count(*) "
    . "FROM mt5credit.webhook_event_replay)"), $before,
   'no run, item, case or replay added');

done_testing;
