#!/usr/bin/perl
#
# A settlement row waits a grace of hours for its credit, a credit waits
# the window for its row (sql/067; issue 30, item 6).  A credit comes
# minutes after its payment (the webhook), its settlement row one to
# several days later: a row has nothing to wait for beyond a short grace.
# Eleven business days in UTC, 2026-06-01 to 2026-06-11, one run a day in
# order, the window 7 days, the grace 24 hours (0 on day 6).  Impossible:
#   - a settled payment whose webhook was lost staying "in transit" for
#     the window: the case opens on the run of the row's day or the next
#     (on the unchanged code it opened seven days after the row's day)
#   - the same for a settled refund no debit met: settled_not_debited
#   - a break before the grace is over: the row waits on its own day's run
#   - a credit without its settlement row breaking early: it is in transit
#     for the whole window, a break only on the run 7 days after its day
#   - a credit (or a debit, paired by payment and amount) that comes after
#     its row was reported lost: it pairs with that row, matched later, and
#     is never a credited_not_settled of its own
#   - a break reported again every day: once, then carried silently
#   - a run not saying which grace it used (recon_run, its digest, report)
#   - a grace outside 0..168 hours accepted, from the file, the command
#     line or the database

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

# the simulator's clock is UTC+2 (its default offset): a zone without
# summer time, whatever the month the test runs in
$sim->set_offset(120);
$st->account(login => $_) for 77801 .. 77803;

my %main = (
    servers => [ [ 'live1', $sim, recon_groups => 'real\\usd',
                   time_zone => 'Etc/GMT-2' ] ],
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    recon_out => $sb->dir, call_timeout => 3, lease => 20,
    recon_match_window => 7);
# the grace is the default (24 hours): the file does not name it
my $conf = Mt5Credit::Worker::config($sb, 'recon', %main);

# --- the calendar ----------------------------------------------------

my $DAYS = 11;
my $DAY0 = timegm(0, 0, 0, 1, 5, 2026);
my @day = map { my @t = gmtime($DAY0 + $_ * 86400);
                sprintf('%04d-%02d-%02d', $t[5] + 1900, $t[4] + 1, $t[3]) }
          0 .. $DAYS - 1;

sub at {
    my ($i, $hm) = @_;
    my ($h, $m) = split /:/, $hm;
    return $DAY0 + $i * 86400 + $h * 3600 + $m * 60;
}

sub server_time { $_[0] + 7200 }

# --- the records, planted --------------------------------------------

my (%rows, %expect, %later);
my $seq = 0;

sub ingest {
    my ($body) = @_;
    my $q = $body =~ s/'/''/gr;
    my $r = $sb->psql("SELECT outcome, coalesce(credit_id, 0) FROM "
                      . "mt5credit.ingest('stripe', NULL, convert_to('$q', "
                      . "'UTF8'), 'stripe', NULL)", user => 'edge');
    return $r->[0][1];
}

sub reference { $sb->sql1("SELECT reference FROM mt5credit.mt5_credit "
                          . "WHERE id = $_[0]") }

# the worker's work, back-dated: the credit made at $at (UTC), its deal a
# minute later
sub done {
    my ($id, $login, $signed, $at) = @_;
    my $ref = reference($id);
    my $ticket = $sim->manual_deal(login => $login,
        amount => Mt5Credit::Settlement::major($signed), comment => $ref,
        time => server_time($at + 60));
    $sb->psql(<<"SQL");
SET session_replication_role = replica;
UPDATE mt5credit.mt5_credit
SET status = 'done', attempts = 1, mt5_deal_ticket = $ticket,
    claimed_at = to_timestamp($at), claimed_by = 'fixture',
    lease_expires_at = to_timestamp($at) + interval '1 minute',
    created_at = to_timestamp($at), updated_at = to_timestamp($at + 60)
WHERE id = $id;
SQL
    return $ref;
}

my %pay;

# a deposit paid at $at; its webhook is credited at $credited, or lost
sub payment {
    my ($name, $login, $amount, $credited) = @_;
    my $pi = "pi_grace_$name";
    my $dep = $sb->create_deposit(client => 'alice', login => $login,
                                  amount => $amount);
    $pay{$name} = { pi => $pi, dep => $dep, login => $login,
                    amount => $amount };
    credit($name, $credited) if defined $credited;
    return $pay{$name};
}

# the webhook, now (it was lost, or it is late)
sub credit {
    my ($name, $at) = @_;
    my $p = $pay{$name};
    my $id = ingest(stripe_event(deposit => $p->{dep}, amount => $p->{amount},
                                 pi => $p->{pi}));
    $p->{id} = $id;
    $p->{ref} = done($id, $p->{login}, $p->{amount}, $at);
    return $p->{ref};
}

sub settle {
    my ($i, %r) = @_;
    push @{ $rows{$i} }, { id => 'txn_' . ++$seq, fee => 0,
                           payout => "po_$i", %r };
}

sub settle_payment {
    my ($i, $name, $hm, $id) = @_;
    settle($i, category => 'charge', pi => $pay{$name}{pi},
           source => "ch_grace_$name", gross => $pay{$name}{amount},
           deposit => $pay{$name}{dep}, at => at($i, $hm),
           ($id ? (id => $id) : ()));
}

sub finding { push @{ $expect{ $_[0] } }, "$_[1] $_[2]" }

# a credit settled the next day, as most are
payment('next', 77801, 12000, at(0, '12:00'));
settle_payment(1, 'next', '09:00');
push @{ $later{1} }, "credit $pay{next}{ref}";

# a credit settled three days later (D+3): in transit, no break
payment('d3', 77802, 9000, at(2, '10:00'));
settle_payment(5, 'd3', '07:00');
push @{ $later{5} }, "credit $pay{d3}{ref}";

# a credit whose row never comes: it waits the whole window
payment('unsettled', 77803, 3300, at(0, '10:00'));
finding(7, 'credited_not_settled', $pay{unsettled}{ref});

# a paid deposit whose webhook was lost (no events API to ask): its row
# on day 1 at 10:00; the grace is over at day 2's end
payment('lost', 77801, 25000);
settle_payment(1, 'lost', '10:00', 'txn_lost');
finding(2, 'settled_not_credited', 'settlement:txn_lost');

# another lost webhook, day 1 at 11:00: reported on day 2, and its credit
# made after day 3's run (a late delivery, a replay): paired on day 4
payment('late', 77802, 4100);
settle_payment(1, 'late', '11:00', 'txn_late');
finding(2, 'settled_not_credited', 'settlement:txn_late');
push @{ $later{4} }, 'settlement txn_late';

# a refund of "next" whose webhook was lost: its row on day 3 at 09:00,
# settled_not_debited on day 4; the webhook (the cumulative amount, so
# another key) comes after day 4's run: paired by payment and amount
settle(3, category => 'refund', pi => $pay{next}{pi}, source => 're_lost',
       gross => -1500, at => at(3, '09:00'), id => 'txn_re_lost');
finding(4, 'settled_not_debited', 'settlement:txn_re_lost');
push @{ $later{5} }, 'settlement txn_re_lost';

# day 6 runs with no grace: its row is a break on its own day
payment('lost6', 77803, 6600);
settle_payment(6, 'lost6', '08:00', 'txn_lost6');
finding(6, 'settled_not_credited', 'settlement:txn_lost6');

my $conf0 = Mt5Credit::Worker::config($sb, 'recon0', %main,
                                      recon_settlement_grace => 0);

# --- the runs --------------------------------------------------------

sub files {
    my ($i) = @_;
    my @r = (@{ $rows{$i} || [] },
             { id => "txn_fee_$i", category => 'fee', gross => -100,
               fee => 0, at => at($i, '12:00'), payout => "po_$i" });
    return ($sb->write_file("settle-$i.csv",
                            Mt5Credit::Settlement::stripe_csv(\@r)),
            $sb->write_file("control-$i.csv",
                            Mt5Credit::Settlement::control_csv(\@r)));
}

sub reconcile {
    my ($i, %o) = @_;
    my ($csv, $control) = files($i);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile',
        '-c', $o{conf} || $conf, '--provider', 'stripe', '--day', $day[$i],
        '--tz', 'UTC', '--currency', 'USD', '--format', 'stripe',
        '--settlement', $csv, '--control', $control, @{ $o{args} || [] });
    my ($run) = $out =~ /^run (\d+):/m;
    return ($rc, $out, $run // 0);
}

sub items_of {
    my ($run) = @_;
    return join ', ', map { "$_->[0] $_->[1]" } @{ $sb->psql(
        "SELECT kind, item_key FROM mt5credit.recon_item WHERE run_id = "
        . "$run ORDER BY kind, item_key") };
}

sub later_of {
    my ($run) = @_;
    return join ', ', map { "$_->[0] $_->[1]" } @{ $sb->psql(
        "SELECT side, item_key FROM mt5credit.recon_matched_later "
        . "WHERE run_id = $run ORDER BY side, item_key") };
}

# one value; on a schema without the column asked for, the error's text
sub q1 {
    my $r = $sb->psql($_[0], may_fail => 1);
    return ref $r ? $r->[0][0] : ($r =~ /(ERROR:.*)/)[0];
}

sub count_of {
    my ($run, $name) = @_;
    return $sb->sql1("SELECT n FROM mt5credit.recon_count WHERE run_id = "
                     . "$run AND dimension = 'summary' AND name = '$name'")
        // 0;
}

# in transit after a run: 'settlement txn_x', 'credit dep:N'
sub transit_of {
    my ($run) = @_;
    my $r = $sb->psql(
        "SELECT 'settlement', row_id FROM mt5credit.recon_transit_settlement "
        . "WHERE run_id = $run AND NOT overdue UNION ALL "
        . "SELECT 'credit', reference FROM mt5credit.recon_transit_credit "
        . "WHERE run_id = $run ORDER BY 1, 2", may_fail => 1);
    return ref $r ? join(', ', map { "$_->[0] $_->[1]" } @$r) : $r;
}

my (%run, %first, %in_transit);
for my $i (0 .. $DAYS - 1) {
    my ($rc, $out, $run) = reconcile($i, $i == 6 ? (conf => $conf0) : ());
    $run{$i} = $run;
    # what a person (or a late delivery) does after a run
    credit('late', at(4, '09:00')) if $i == 3;
    if ($i == 4) {
        my $id = ingest(stripe_event(type => 'charge.refunded',
                                     pi => $pay{next}{pi}, amount => 1500,
                                     charge => 'ch_grace_next'));
        $pay{refund} = { id => $id,
                         ref => done($id, 77801, -1500, at(5, '10:00')) };
    }
    my $items = $run ? items_of($run) : "(no run: exit $rc)";
    for my $f (split /, /, $items) {
        $first{$f} //= $i;
    }
    if ($run) {
        for my $row (qw(txn_lost txn_late txn_re_lost txn_lost6)) {
            $in_transit{$row}++ if $sb->sql1(
                "SELECT count(*) FROM mt5credit.recon_transit_settlement "
                . "WHERE run_id = $run AND row_id = '$row' "
                . "AND coalesce(to_jsonb(recon_transit_settlement)"
                . "->>'overdue', 'false') = 'false'");
        }
    }
    my $want = join ', ', sort @{ $expect{$i} || [] };
    is($items, $want, "day $i ($day[$i]): "
       . ($want eq '' ? 'nothing to report' : "exactly $want"))
        or diag $out;
    is($rc, $want eq '' ? 0 : 1, "day $i: exit " . ($want eq '' ? 0 : 1));
    is($run ? later_of($run) : '', join(', ', sort @{ $later{$i} || [] }),
       "day $i: what earlier runs carried and this one matched");
}

# --- the lost webhook, measured --------------------------------------

my $opened = $first{'settled_not_credited settlement:txn_lost'};
is($opened, 2, 'the lost webhook of day 1 is a case on day 2\'s run, the '
   . 'day after its row (grace 24 h)')
    or diag('the case opened on day ' . ($opened // 'never (in 11 days)')
            . ', D+' . (defined $opened ? $opened - 1 : '?')
            . ' after its row; the row was in transit after '
            . ($in_transit{txn_lost} // 0) . ' runs');
is($in_transit{txn_lost} // 0, 1,
   '... in transit after one run only, its own day\'s');
is($first{'settled_not_debited settlement:txn_re_lost'}, 4,
   'the lost refund webhook of day 3 is a case on day 4\'s run')
    or diag('in transit after ' . ($in_transit{txn_re_lost} // 0)
            . ' runs');
is($first{'settled_not_credited settlement:txn_lost6'}, 6,
   'with no grace (day 6), a row is a case on its own day\'s run');

my $case = $sb->psql("SELECT details->>'business_day', details->>'sightings', "
    . "status FROM mt5credit.case WHERE dedupe_key = "
    . "'recon:settled_not_credited:stripe:settlement:txn_lost'");
is_deeply($case, [ [ $day[2], 1, 'open' ] ],
          'its case was opened by day 2\'s run and sighted once: not '
          . 'reported again every day');
is(transit_of($run{1}), join(', ', sort
       "credit $pay{unsettled}{ref}", 'settlement txn_late',
       'settlement txn_lost'),
   'day 1: the rows of the day wait (10 and 11 hours old at its end)');
is(q1("SELECT string_agg(row_id, ',' ORDER BY row_id) FROM "
      . "mt5credit.recon_transit_settlement WHERE run_id = $run{3} "
      . "AND overdue"), 'txn_late,txn_lost',
   'day 3: the reported rows are carried, overdue, for a late credit');
is(count_of($run{3}, 'overdue'), 2, '... and counted');
is(count_of($run{3}, 'in_transit'), 3,
   '... beside what is in transit: the unsettled credit, the D+3 credit, '
   . 'the refund row of the day');

# --- credits keep their window ---------------------------------------

is($first{"credited_not_settled $pay{unsettled}{ref}"}, 7,
   'a credit without its row breaks on day 7, not earlier');
is($sb->sql1("SELECT age_days FROM mt5credit.recon_transit_credit "
             . "WHERE run_id = $run{6} AND credit_id = $pay{unsettled}{id}"),
   6, '... it was in transit on day 6, 6 days old');
is($sb->sql1("SELECT age_days FROM mt5credit.recon_transit_credit "
             . "WHERE run_id = $run{4} AND credit_id = $pay{d3}{id}"), 2,
   'the D+3 credit waits (2 days old on day 4) and pairs on day 5');

# --- what came after the break still pairs ---------------------------

is($sb->sql1("SELECT first_run_id FROM mt5credit.recon_matched_later "
             . "WHERE run_id = $run{4} AND item_key = 'txn_late'"), $run{1},
   'the late credit paired on day 4 with the row day 1\'s run first saw');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_item WHERE kind IN "
             . "('credited_not_settled', 'debited_not_settled') AND "
             . "item_key IN ('$pay{late}{ref}', '$pay{refund}{ref}')"), 0,
   'neither the late credit nor the late debit is ever a break of its own');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_transit_credit "
             . "WHERE credit_id IN ($pay{late}{id}, $pay{refund}{id})"), 0,
   '... nor waits for a row: each found its row at once');

# --- what each run used ----------------------------------------------

is(q1("SELECT string_agg(DISTINCT match_window_days || '/' "
      . "|| settlement_grace_hours, ',') FROM mt5credit.recon_run "
      . "WHERE id IN (" . join(',', map { $run{$_} || 0 }
                              grep { $_ != 6 } 0 .. $DAYS - 1)
      . ')'), '7/24', 'every run records its window and grace');
is(q1("SELECT settlement_grace_hours FROM mt5credit.recon_run "
      . "WHERE id = $run{6}"), 0, '... day 6 its grace of 0');

my $html = do {
    local $/;
    open my $f, '<', "$sb->{dir}/recon-stripe-$day[3]-USD-run$run{3}.html";
    $f ? <$f> : '';
};
like($html, qr/data-field="match_window_days"><th>matching window<\/th><td>7 days</,
     'the report says the window it used');
like($html, qr/data-field="settlement_grace_hours"><th>settlement grace<\/th><td>24 hours</,
     '... and the grace');
like($html, qr/data-name="overdue"><th>[^<]*<\/th><td class="n num">2</,
     '... and counts the overdue rows');
unlike($html, qr/data-side="settlement"[^>]*>(?:(?!<\/tr>).)*txn_lost/s,
       '... which are not listed as in transit');

# --- the grace is an input -------------------------------------------

my ($rc, $out) = reconcile($DAYS - 1);
like($out, qr/nothing new written/, 'the last day again: nothing new');
my $again;
($rc, $out, $again) = reconcile($DAYS - 1,
                                args => [ '--settlement-grace', '48' ]);
unlike($out, qr/nothing new written/,
       '... with another grace (--settlement-grace 48): a new run');
is(q1("SELECT settlement_grace_hours FROM mt5credit.recon_run "
      . "WHERE id = " . ($again || 0)), 48, '... which records it');

# --- a grace out of bounds is refused --------------------------------

my $runs = $sb->sql1('SELECT count(*) FROM mt5credit.recon_run');
for my $bad ([ '169', qr/"recon_settlement_grace" must be between 0 and 168/ ],
             [ '-1', qr/"recon_settlement_grace" must be between 0 and 168/ ],
             [ '24h', qr/"recon_settlement_grace" must be an integer, not "24h"/ ])
{
    my $c = Mt5Credit::Worker::config($sb, 'recon-bad', %main,
                                      recon_settlement_grace => $bad->[0]);
    ($rc, $out) = reconcile($DAYS - 1, conf => $c);
    is($rc, 2, "recon_settlement_grace = $bad->[0]: refused (exit 2)");
    like($out, qr/worker-recon-bad\.conf:\d+: $bad->[1]/,
         '... naming the file, the line and the bound')
        or diag $out;
}
($rc, $out) = reconcile($DAYS - 1, args => [ '--settlement-grace', '169' ]);
is($rc, 2, '--settlement-grace 169: refused (exit 2)');
like($out, qr/--settlement-grace "169" is not 0\.\.168 hours/,
     '... saying why') or diag $out;
is($sb->sql1('SELECT count(*) FROM mt5credit.recon_run'), $runs,
   '... and no run was written');

my $err = $sb->psql(<<'SQL', user => 'recon', may_fail => 1);
BEGIN;
SELECT mt5credit.recon_window(run_id, 7, 169)
FROM mt5credit.recon_begin('stripe', '2026-06-20', 'UTC', 'USD', 'stripe',
                           repeat('0', 64), NULL, interval '1 hour');
ROLLBACK;
SQL
like(ref $err ? '' : $err, qr/settlement_grace/,
     'the database refuses a grace of 169 hours itself');

done_testing;
