#!/usr/bin/perl
#
# Reconciliation of the day an MT5 server's summer time began.  Deal
# times are the server's wall clock; most brokers run it on Eastern
# European time, UTC+2 in winter, +3 in summer (2026-03-29 01:00 UTC).
# Deals of that day were made under both offsets, and the run, months
# later, measures a third moment's.  With the server's zone configured
# (time_zone), impossible:
#   - a deal near midnight falling on the wrong day: each deal's UTC time
#     is its server time read in the zone, the offset of its own moment
#   - a deal of the day left out of the fetch: the window in server time
#     is the zone's, from the day's first offset to its last
#   - a zone that is not the server's cutting every day wrong: the run
#     refuses when the server's clock disagrees with it now, and a zone
#     the database does not know is named with its server
# Without a zone the offset measured at the run applies to every deal
# (shown, so the difference is visible), unless the runs measured the
# server's clock near the day's ends (sql/041): then the day's deals are
# read at the offset of both ends, and a day whose offset changed is
# incomplete.  The 25-hour day summer time ends on, in London and in
# Riga, is cut right too.

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Settlement;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
$st->account(login => 76301);

# the simulator keeps UTC+2 now: Riga's offset in December
$sim->set_offset(120);

sub server_time {          # UTC "YYYY-MM-DD HH:MM" and the offset in force
    my ($utc, $hours) = @_;
    my ($y, $m, $d, $H, $M) = $utc =~ /^(\d+)-(\d+)-(\d+) (\d+):(\d+)$/;
    require Time::Local;
    return Time::Local::timegm(0, $M, $H, $d, $m - 1, $y) + $hours * 3600;
}

# made by a dealer at the time, no reference: each is a finding of its day
my %deal;
for my $d ([ A => '2026-03-28 23:30', 2 ],     # the day before
           [ B => '2026-03-29 00:30', 2 ],     # before the change, UTC+2
           [ C => '2026-03-29 23:30', 3 ],     # after it, UTC+3
           [ D => '2026-03-30 00:30', 3 ],     # the day after
           [ H => '2026-03-30 23:30', 3 ]) {   # its last hour
    my ($name, $utc, $h) = @$d;
    $deal{$name} = $sim->manual_deal(login => 76301, amount => '10.00',
                                     comment => "bonus $name",
                                     time => server_time($utc, $h));
}
my %name_of = reverse %deal;

# a day whose settlement moved no client money (one Stripe fee): only
# MT5's side has anything to match
my @fee = ({ id => 'txn_fee_1', category => 'fee', gross => -100,
             at => server_time('2026-03-29 12:00', 0) });
my $csv = $sb->write_file('settlement.csv',
                          Mt5Credit::Settlement::stripe_csv(\@fee));
my $control = $sb->write_file('control.csv',
                              Mt5Credit::Settlement::control_csv(\@fee));

sub reconcile {
    my (%srv) = @_;
    my $day = delete $srv{day} // '2026-03-29';
    my $tz = delete $srv{tz} // 'UTC';
    my $conf = Mt5Credit::Worker::config($sb, 'recon',
        servers => [ [ 'live1', $sim, recon_groups => 'real\\usd', %srv ] ],
        recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                          . ' dbname=mt5credit user=recon"',
        recon_out => $sb->dir, call_timeout => 3, lease => 20);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
        '--provider', 'stripe', '--day', $day, '--tz', $tz,
        '--currency', 'USD', '--format', 'stripe', '--settlement', $csv, '--control', $control);
    my ($run) = $out =~ /^run (\d+):/m;
    my $found = join ' ', sort map { $name_of{ ($_->[0] =~ /:(\d+)$/)[0] }
                                     // $_->[0] } @{ $sb->psql(
        "SELECT item_key FROM mt5credit.recon_item WHERE run_id = "
        . ($run // 0) . " AND kind = 'deal_without_reference'") };
    return ($rc, $out, $found);
}

my ($rc, $out, $found) = reconcile(time_zone => 'Europe/Riga');
is($rc, 1, 'the zoned run finds breaks (exit 1)') or diag $out;
is($found, 'B C',
   'exactly the two deals of the day, one under each offset');

($rc, $out, $found) = reconcile(time_zone => 'EET-2EEST,M3.5.0/3,M10.5.0/4');
is($found, 'B C', '... the same with the zone as a POSIX rule') or diag $out;

($rc, $out, $found) = reconcile();
is($found, 'B', 'without a zone, the late deal (UTC+3) moves to the next day')
    or diag $out;

($rc, $out) = reconcile(time_zone => 'Asia/Tokyo');
isnt($rc, 0, 'a zone that is not the server\'s: the run refuses');
like($out, qr/clock is UTC\+120 min, its time_zone "Asia\/Tokyo" says UTC\+540 min/,
     '... naming both clocks');

($rc, $out) = reconcile(time_zone => 'Mars/Olympus');
isnt($rc, 0, 'a zone the database does not know: refused');
like($out, qr/\[server live1\] time_zone "Mars\/Olympus"/,
     '... named with its server');

# --- a server without a zone: the offset at each end of the day ---------

# what earlier runs measured, as the daily timer makes them just after
# midnight: UTC+2 before the change, UTC+3 after it (sql/041)
sub measured {
    my ($day, $at, $offset) = @_;
    $sb->psql(<<"SQL");
INSERT INTO mt5credit.recon_run (provider, business_day, time_zone, currency,
    window_start, window_end, deal_window_end, settlement_format,
    settlement_sha256, verdict, input_digest, started_at, finished_at)
VALUES ('stripe', '$day', 'UTC', 'USD',
        '$day'::timestamp AT TIME ZONE 'UTC',
        ('$day'::date + 1)::timestamp AT TIME ZONE 'UTC',
        ('$day'::date + 1)::timestamp AT TIME ZONE 'UTC', 'stripe',
        repeat('0', 64), 'reconciled', 'fixture',
        '$at'::timestamp AT TIME ZONE 'UTC', '$at'::timestamp AT TIME ZONE 'UTC');
INSERT INTO mt5credit.recon_clock (run_id, mt5_server, offset_s, measured_at)
SELECT max(id), 'live1', $offset, '$at'::timestamp AT TIME ZONE 'UTC'
FROM mt5credit.recon_run;
SQL
}
measured('2026-03-28', '2026-03-29 00:20', 7200);
measured('2026-03-29', '2026-03-30 00:20', 10800);
measured('2026-03-30', '2026-03-31 00:20', 10800);

($rc, $out) = reconcile();
is($rc, 3, 'no zone, the offset changed during the day: incomplete');
like($out, qr/no time_zone and its clock changed during the day: UTC\+120 min at its start \(run \d+ at 2026-03-29 00:20 UTC\), UTC\+180 min at its end \(run \d+ at 2026-03-30 00:20 UTC\).*set time_zone/,
     '... naming both offsets and where they were measured') or diag $out;

@fee = ({ id => 'txn_fee_3', category => 'fee', gross => -100,
          at => server_time('2026-03-30 12:00', 0) });
$csv = $sb->write_file('settlement.csv',
                       Mt5Credit::Settlement::stripe_csv(\@fee));
$control = $sb->write_file('control.csv',
                           Mt5Credit::Settlement::control_csv(\@fee));
($rc, $out, $found) = reconcile(day => '2026-03-30');
is($found, 'D H', 'no zone, a day under UTC+3 run when the clock says '
   . 'UTC+2: read at the offset of both its ends, not the one now')
    or diag $out;
like($out, qr/clock is UTC\+120 min now; UTC\+180 min at the day's start \(run \d+/,
     '... and says so');

# the day summer time ended, in London (25 hours: 00:00 BST, 23:00 UTC
# the day before, to 24:00 GMT) on a server in Riga (EEST to EET at
# 01:00 UTC too): a deal at 00:30 BST and one at 23:30 GMT, in the last
# of its 25 hours, are the day's; 00:30 GMT the day after is not
for my $d ([ E => '2026-10-24 23:30', 3 ],    # 00:30 BST Oct 25
           [ F => '2026-10-25 23:30', 2 ],    # 23:30 GMT Oct 25
           [ G => '2026-10-26 00:30', 2 ]) {  # the day after
    my ($name, $utc, $h) = @$d;
    $deal{$name} = $sim->manual_deal(login => 76301, amount => '10.00',
                                     comment => "bonus $name",
                                     time => server_time($utc, $h));
    $name_of{ $deal{$name} } = $name;
}
@fee = ({ id => 'txn_fee_2', category => 'fee', gross => -100,
          at => server_time('2026-10-25 12:00', 0) });
$csv = $sb->write_file('settlement.csv',
                       Mt5Credit::Settlement::stripe_csv(\@fee));
$control = $sb->write_file('control.csv',
                           Mt5Credit::Settlement::control_csv(\@fee));
($rc, $out, $found) = reconcile(time_zone => 'Europe/Riga',
                                day => '2026-10-25', tz => 'Europe/London');
is($found, 'E F', 'the 25-hour day: its first and its 25th hour\'s deals, '
   . 'not the next day\'s') or diag $out;
like($out, qr/window is 1792893600\.\.1793066400 server time/,
     '... fetched from its start under EEST (02:00 server time) to a '
     . 'day past its end under EET') or diag $out;

done_testing;
