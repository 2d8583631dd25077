#!/usr/bin/perl
#
# The daily three-way reconciliation, end to end: payments through nginx,
# credits made by the worker on the MT5 simulator, a planted day with one
# of every difference, the provider's settlement file, `mt5credit
# reconcile`.  Impossible:
#   - a difference of any kind passing as matched, or reported as another
#     kind (each planted one is found, exactly, and nothing else is)
#   - a clean movement (payment, refund, chargeback) reported as a case
#   - money settled and held by a risk rule passing as reconciled
#   - a refund the file names otherwise than the webhook left unmatched
#   - re-running a day duplicating cases, items or runs
#   - a truncated file, a bad amount, a file in another currency writing
#     anything (the run fails with the line, nothing changes)
#   - a settlement file that does not add up to its control totals, or an
#     MT5 fetch that lost a page, giving a result: the run is `incomplete`
#   - a changed input hiding as the old run (it is a new run, and counts
#     what got fixed)
#   - the HTML report not showing what the run found (headless Chromium)

use strict;
use warnings;

use POSIX qw(strftime);
use Digest::SHA qw(sha256_hex);
use Test::More;

use lib 't/lib';
use Mt5Credit::Browser;
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Settlement;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

$sim->add_group(group => 'real\\eur', currency => 'EUR',
                currency_digits => 2);
$st->account(login => $_) for 70101, 70102, 70103;
# our records say USD; MT5 has it in a EUR group (a misconfigured account)
$sim->add_account(login => 70104, group => 'real\\eur', balance => '0.00',
                  credit => '0.00', rights => 1);
$sb->register_account('alice', 70104, 'USD');

my $conf = Mt5Credit::Worker::config($sb, 'recon',
    servers => [ [ 'live1', $sim, recon_groups => 'real\\usd, real\\eur' ] ],
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    recon_out => $sb->dir,
    call_timeout => 3, lease => 20, settle_margin => 1,
    # one day alone: every difference is a break on the day (what waits
    # for a partner on another day is t/65's)
    recon_match_window => 0);

my $day = strftime('%Y-%m-%d', gmtime);
my $now = time;
my @rows;
my %credit;
my $seq = 0;

sub row { push @rows, { at => $now, fee => 0, id => 'txn_' . ++$seq, @_ } }

sub pay {
    my ($name, %p) = @_;
    my $pi = "pi_recon_$name";
    $credit{$name} = $st->pay(login => $p{login} || 70101,
                              amount => $p{amount} || 10000, pi => $pi);
    return $pi;
}

sub done_by_hand {
    my ($id, $ticket) = @_;
    $sb->psql(<<"SQL");
BEGIN;
SELECT set_config('mt5credit.actor', 'test-fixture', true);
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = 1,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute' WHERE id = $id;
UPDATE mt5credit.mt5_credit SET status = 'done', mt5_deal_ticket = $ticket
    WHERE id = $id;
COMMIT;
SQL
}

sub reference_of { $st->credit($credit{ $_[0] })->{reference} }

sub reconcile {
    my (%o) = @_;
    my $file = $sb->write_file('settlement.csv', $o{csv}
        // Mt5Credit::Settlement::stripe_csv($o{rows} || \@rows));
    my $control = $sb->write_file('control.csv', $o{control}
        // Mt5Credit::Settlement::control_csv($o{rows} || \@rows));
    return Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
        '--provider', 'stripe', '--day', $day, '--tz', 'UTC',
        '--currency', $o{currency} || 'USD', '--format', 'stripe',
        '--settlement', $file, ($o{no_control} ? () : ('--control', $control)));
}

sub counts {
    my ($sql) = @_;
    return { map { $_->[0] => $_->[1] } @{ $sb->psql($sql) } };
}

sub state_counts {
    return $sb->sql1("SELECT (SELECT count(*) FROM mt5credit.recon_run) || '/' "
        . "|| (SELECT count(*) FROM mt5credit.recon_item) || '/' "
        . "|| (SELECT count(*) FROM mt5credit.case) || '/' "
        . "|| (SELECT coalesce(sum((details->>'sightings')::int), 0) "
        . "FROM mt5credit.case)");
}

# --- the clean movements, made by the worker --------------------------

$st->start_worker('w1', %{ { call_timeout => 3 } });

my $pi_a = pay('a', amount => 10000);
my $pi_b = pay('b', amount => 20000);
my $pi_c = pay('c', amount => 5000);
my $pi_d = pay('d', amount => 7000);
my $pi_dup = pay('dup', amount => 1500);
my $pi_nosettle = pay('nosettle', amount => 2500);
my $pi_cb = pay('cb', amount => 9000);
ok($st->wait_status($credit{$_}, 'done'), "credit $_ is made")
    for qw(a b c d dup nosettle cb);

# a refund listed by id (matched by key), one whose webhook carries only
# the cumulative amount (matched by payment and amount), one never settled
my $res = $st->webhook(stripe_event(type => 'charge.refunded', pi => $pi_a,
    charge => 'ch_recon_a', amount => 3000, refunds => [ [ 're_a1', 3000 ] ]));
my ($rf_a) = $res->{body} =~ /"credit":(\d+)/;
my $rf_d = $st->refund(of => $credit{d}, amount => 7000,
                       charge => 'ch_recon_d');
my $rf_c = $st->refund(of => $credit{c}, amount => 1000,
                       charge => 'ch_recon_c');
$res = $st->webhook(stripe_event(type => 'charge.dispute.funds_withdrawn',
    pi => $pi_cb, dispute => 'du_recon_cb', amount => 9000));
my ($cb) = $res->{body} =~ /"credit":(\d+)/;
ok($st->wait_status($_, 'done'), "debit $_ is made") for $rf_a, $rf_d, $rf_c, $cb;
$st->stop_worker('w1');

row(category => 'charge', pi => $pi_a, source => 'ch_recon_a', gross => 10000,
    fee => 320, deposit => 'dep_x');
row(category => 'charge', pi => $pi_b, source => 'ch_recon_b', gross => 20000,
    fee => 610);
row(category => 'charge', pi => $pi_c, source => 'ch_recon_c', gross => 5000,
    fee => 175);
row(category => 'charge', pi => $pi_d, source => 'ch_recon_d', gross => 7000);
row(category => 'charge', pi => $pi_dup, source => 'ch_recon_dup',
    gross => 1500);
row(category => 'charge', pi => $pi_cb, source => 'ch_recon_cb',
    gross => 9000);
row(category => 'refund', pi => $pi_a, source => 're_a1', gross => -3000);
row(category => 'refund', pi => $pi_d, source => 're_d_file_only_id',
    gross => -7000);
row(category => 'dispute', pi => $pi_cb, source => 'du_recon_cb',
    gross => -9000, fee => 1500);
row(category => 'fee', source => 'fee_1', gross => -2500);

# --- the planted differences --------------------------------------------

# settled, never credited (the webhook was lost)
row(category => 'charge', pi => 'pi_recon_lost', source => 'ch_lost',
    gross => 5500, deposit => 'dep_000999');
# a refund settled that we never debited
row(category => 'refund', pi => $pi_b, source => 're_b_lost', gross => -2000);

# our database says done, MT5 has no such deal
my $pi_nodeal = pay('nodeal', amount => 4000);
done_by_hand($credit{nodeal}, 990001);
row(category => 'charge', pi => $pi_nodeal, gross => 4000);

# the deal carries another amount than the credit
my $pi_damt = pay('damt', amount => 10000);
done_by_hand($credit{damt}, $sim->manual_deal(login => 70101,
    amount => '99.00', comment => reference_of('damt')));
row(category => 'charge', pi => $pi_damt, gross => 10000);

# the settlement says another amount than the provider's webhook did
my $pi_samt = pay('samt', amount => 10000);
done_by_hand($credit{samt}, $sim->manual_deal(login => 70101,
    amount => '100.00', comment => reference_of('samt')));
row(category => 'charge', pi => $pi_samt, gross => 12000);

# the deal landed on another login
my $pi_login = pay('login', login => 70101, amount => 3300);
done_by_hand($credit{login}, $sim->manual_deal(login => 70102,
    amount => '33.00', comment => reference_of('login')));
row(category => 'charge', pi => $pi_login, gross => 3300);

# the deal is in another currency than the credit
my $pi_cur = pay('cur', login => 70104, amount => 4400);
done_by_hand($credit{cur}, $sim->manual_deal(login => 70104,
    amount => '44.00', comment => reference_of('cur')));
row(category => 'charge', pi => $pi_cur, gross => 4400);

# a second deal for one credit (a dealer credited it again by hand)
$sim->manual_deal(login => 70101, amount => '15.00',
                  comment => reference_of('dup'));

# deals no credit explains: a reference we never issued, and no reference
$sim->manual_deal(login => 70102, amount => '77.00', comment => 'dep:999999');
$sim->manual_deal(login => 70102, amount => '50.00', comment => 'bonus nov');

# still in flight at the cut-off: pending, and unknown
my $pi_pending = pay('pending', amount => 1200);
row(category => 'charge', pi => $pi_pending, gross => 1200);
my $pi_unknown = pay('unknown', amount => 1300);
$sb->psql(<<"SQL");
BEGIN;
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = 1,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute' WHERE id = $credit{unknown};
UPDATE mt5credit.mt5_credit SET status = 'unknown' WHERE id = $credit{unknown};
COMMIT;
SQL
row(category => 'charge', pi => $pi_unknown, gross => 1300);
# ... and held by a risk rule, two people yet to decide (087)
my $pi_held = pay('held', amount => 1400);
$sb->psql(<<"SQL");
BEGIN;
SET LOCAL session_replication_role = replica;
UPDATE mt5credit.mt5_credit SET status = 'held',
    held_for = '[{"rule": "credit_amount"}]' WHERE id = $credit{held};
COMMIT;
SQL
row(category => 'charge', pi => $pi_held, gross => 1400);

my %expected = (
    settled_not_credited   => 1,
    settled_not_debited    => 1,
    credited_not_settled   => 1,
    debited_not_settled    => 1,
    credit_without_deal    => 1,
    deal_unknown_reference => 1,
    deal_duplicate         => 1,
    deal_without_reference => 1,
    amount_mismatch        => 2,
    currency_mismatch      => 1,
    login_mismatch         => 1,
    open_at_cutoff         => 3,
);

# --- inputs that must change nothing ------------------------------------

my $before = state_counts();

{
    my $csv = Mt5Credit::Settlement::stripe_csv(\@rows);
    chop $csv for 1 .. 9;
    my ($rc, $out) = reconcile(csv => $csv);
    is($rc, 2, 'a file cut mid-line: exit 2');
    like($out, qr/line \d+: truncated/, '... naming the line');
    is(state_counts(), $before, '... and nothing was written');
}

{
    my @bad = map { {%$_} } @rows;
    $bad[2]{gross_text} = '50.0O';
    my ($rc, $out) = reconcile(rows => \@bad);
    is($rc, 2, 'a bad amount: exit 2');
    # each row spans two lines (a quoted multi-line metadata value)
like($out, qr/line 6: bad amount "50\.0O"/, '... naming line and value');
    is(state_counts(), $before, '... and nothing was written');
}

{
    my @eur = map { {%$_, currency => 'eur'} } @rows;
    my ($rc, $out) = reconcile(rows => \@eur);
    is($rc, 2, 'a file in another currency: exit 2');
    like($out, qr/currency EUR, this run reconciles USD/, '... saying so');
    is(state_counts(), $before, '... and nothing was written');
}

{
    my @dup = (@rows, { %{ $rows[0] } });
    my ($rc, $out) = reconcile(rows => \@dup);
    is($rc, 2, 'one balance transaction twice: exit 2');
    like($out, qr/lines 2 and \d+: the same row id/, '... naming both lines');
    is(state_counts(), $before, '... and nothing was written');
}

# --- incomplete sources -------------------------------------------------

{
    # cut at a line boundary: every line parses, the payout does not add up
    my @short = @rows[0 .. $#rows - 1];
    my ($rc, $out) = reconcile(rows => \@short,
        control => Mt5Credit::Settlement::control_csv(\@rows));
    is($rc, 3, 'rows that do not add up to the payout: exit 3');
    like($out, qr/incomplete.*payout "po_test_1".*control total says/s,
         '... the reason names the payout and both totals');
    is($sb->sql1("SELECT verdict || ':' || (reason IS NOT NULL) FROM "
                 . "mt5credit.recon_run ORDER BY id DESC LIMIT 1"),
       'incomplete:true', '... recorded as an incomplete run with its reason');
    is($sb->sql1('SELECT count(*) FROM mt5credit.recon_item'), 0,
       '... with no items');
    is($sb->sql1('SELECT count(*) FROM mt5credit.case '
                 . "WHERE dedupe_key LIKE 'recon:%'"), 0, '... and no cases');
}

{
    my ($rc, $out) = reconcile(no_control => 1);
    is($rc, 3, 'no control totals at all: exit 3 (cannot be shown complete)');
    like($out, qr/no control totals/, '... saying why');
}

{
    $sim->fault(kind => 'partial_page', count => 0);
    my ($rc, $out) = reconcile();
    $sim->clear_faults;
    is($rc, 3, 'an MT5 deal page that came back short: exit 3');
    like($out, qr/MT5 deals incomplete: MT5 server live1: deals of login \d+/,
         '... naming the server and login');
    is($sb->sql1('SELECT count(*) FROM mt5credit.recon_item'), 0,
       '... no items');
}

# --- the planted day ----------------------------------------------------

my ($rc, $out) = reconcile();
is($rc, 1, 'the planted day: exit 1 (breaks)') or diag $out;
my ($run) = $out =~ /^run (\d+): breaks/m;
ok($run, 'the run is named with its verdict');

my $found = counts("SELECT kind, count(*) FROM mt5credit.recon_item "
                   . "WHERE run_id = $run GROUP BY kind");
is_deeply($found, \%expected, 'every planted difference found, as its kind, '
          . 'and nothing else') or diag explain $found;

my $keys = counts("SELECT kind || ' ' || item_key, 1 FROM "
                  . "mt5credit.recon_item WHERE run_id = $run");
ok($keys->{'settled_not_credited settlement:txn_11'},
   'the lost webhook is the settlement row of pi_recon_lost');
ok($keys->{'credit_without_deal ' . reference_of('nodeal')},
   'the credit without a deal is the one done by hand');
ok($keys->{'deal_duplicate ' . reference_of('dup')}, 'the duplicate deal');
ok($keys->{'amount_mismatch ' . reference_of('damt')},
   'the deal with 99.00 for a 100.00 credit');
ok($keys->{'amount_mismatch ' . reference_of('samt')},
   'the settlement of 120.00 for a 100.00 payment');
ok($keys->{'login_mismatch ' . reference_of('login')}, 'the deal on 70102');
ok($keys->{'currency_mismatch ' . reference_of('cur')}, 'the EUR deal');
ok($keys->{'credited_not_settled ' . reference_of('nosettle')},
   'the credit the provider never settled');
ok($keys->{'debited_not_settled ' . $st->ref_of($rf_c)},
   'the refund never settled');
ok($keys->{'open_at_cutoff ' . reference_of('pending')}, 'the pending credit');
ok($keys->{'open_at_cutoff ' . reference_of('unknown')}, 'the unknown credit');
ok($keys->{'open_at_cutoff ' . reference_of('held')},
   'the held credit: settled, not credited, two people to decide');

my $clean = join ',', map { reference_of($_) } qw(a b c d cb);
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_item WHERE run_id = $run "
             . "AND item_key IN ('" . join("','", split /,/, $clean)
             . "', '" . join("', '", map { $st->ref_of($_) } $rf_a, $rf_d, $cb)
             . "')"), 0,
   'no clean payment, refund (by id or by amount) or chargeback is a case');

my $summary = counts("SELECT name, n FROM mt5credit.recon_count "
                     . "WHERE run_id = $run AND dimension = 'summary'");
is($summary->{should_process}, 19, 'should process: the 19 money rows');
is($summary->{matched}, 8, 'matched: 5 payments, 2 refunds (by key and by '
   . 'amount), the chargeback');
is($summary->{pending}, 1, 'pending: 1');
is($summary->{still_unknown}, 1, 'still unknown: 1');
is($summary->{fixed_since_last_run}, 0, 'fixed since last run: 0 (first run)');

my $items = $sb->sql1("SELECT count(*) FROM mt5credit.recon_item "
                      . "WHERE run_id = $run");
is($sb->sql1("SELECT count(DISTINCT case_id) FROM mt5credit.recon_item "
             . "WHERE run_id = $run"), $items, 'every item has its own case');
is($sb->sql1("SELECT count(*) FROM mt5credit.recon_item i JOIN "
             . "mt5credit.case c ON c.id = i.case_id WHERE i.run_id = $run "
             . "AND c.details ? 'settlement' AND c.details ? 'credit' "
             . "AND c.details ? 'deals'"), $items,
   'each case holds the three records side by side');
is($sb->sql1("SELECT settlement->>'gross_minor' || '/' || "
             . "(credit->>'paid_amount_minor') FROM mt5credit.recon_item "
             . "WHERE run_id = $run AND item_key = '" . reference_of('samt')
             . "'"), '12000/10000', '... e.g. 120.00 settled beside 100.00 paid');

# --- re-run: same inputs, same result, nothing new ----------------------

my $state = state_counts();
($rc, $out) = reconcile();
is($rc, 1, 're-run of the same day: the same verdict');
like($out, qr/run $run: breaks .*nothing new written/,
     '... reported as the same run');
is(state_counts(), $state, '... no new run, item, case or sighting');

# --- a changed input is a new run, counting what was fixed ----------------

# the provider's later file now includes the unsettled credit's payment
push @rows, { category => 'charge', pi => $pi_nosettle, gross => 2500,
              at => $now, fee => 0, id => 'txn_' . ++$seq };
($rc, $out) = reconcile();
my ($run2) = $out =~ /^run (\d+):/m;
ok($run2 && $run2 > $run, 'a changed file is a new run');
my $summary2 = counts("SELECT name, n FROM mt5credit.recon_count "
                      . "WHERE run_id = $run2 AND dimension = 'summary'");
is($summary2->{fixed_since_last_run}, 1, '... one difference fixed since');
is($sb->sql1("SELECT count(*) FROM mt5credit.case "
             . "WHERE dedupe_key LIKE 'recon:%'"),
   $items, '... and no case was duplicated');

# --- the reports ----------------------------------------------------------

my ($csv) = $out =~ /report: (\S+\.csv)/;
my ($html) = $out =~ /report: (\S+\.html)/;
ok($csv && -s $csv, 'a CSV report is written');
open my $fh, '<', $csv or die "$csv: $!";
my @csv = <$fh>;
close $fh;
is(scalar(@csv) - 1, $sb->sql1("SELECT count(*) FROM mt5credit.recon_item "
                               . "WHERE run_id = $run2"),
   '... one line per item');

# the same bytes kept in the database for the console (sql/058)
{
    open my $hf, '<:raw', $html or die "$html: $!";
    local $/;
    my $bytes = <$hf>;
    close $hf;
    is($sb->sql1("SELECT html_sha256 FROM mt5credit.recon_report "
                 . "WHERE run_id = $run2"), sha256_hex($bytes),
       'the HTML report is kept in the database, byte for byte (for the console)');
    is($sb->sql1("SELECT stored_by FROM mt5credit.recon_report "
                 . "WHERE run_id = $run2"), 'recon', '... by the job\'s login');
    like($sb->psql("DELETE FROM mt5credit.recon_report WHERE run_id = $run2",
                   may_fail => 1), qr/ERROR/, '... and never deleted');
}

SKIP: {
    skip 'chromium is not installed', 8 unless Mt5Credit::Browser::available();
    my $dom = Mt5Credit::Browser::dump_dom($sb, $html);
    ok(defined $dom, 'Chromium opens the HTML report');
    $dom //= '';
    like($dom, qr/id="verdict"[^>]*data-verdict="breaks"[^>]*><span[^>]*>breaks</,
         'Chromium shows the verdict');
    like($dom, qr/<tr data-name="matched"><th>[^<]*<\/th><td[^>]*>$summary2->{matched}</,
         '... the matched count');
    like($dom, qr/id="chart"/, '... the chart');
    like($dom, qr/class="bar"[^>]*data-movement="payment"/,
         '... a bar for payments');
    my $rows_shown = () = $dom =~ /<tr class="item"/g;
    is($rows_shown, $sb->sql1("SELECT count(*) FROM mt5credit.recon_item "
                              . "WHERE run_id = $run2"),
       '... every mismatch as a row');
    like($dom, qr/data-kind="login_mismatch"/, '... including the wrong login');
    unlike($dom, qr/<script[^>]*src=|<link[^>]*href="http/,
           '... from one self-contained file');
}


# --- the generic format ---------------------------------------------------

{
    my @charges = grep { $_->{category} eq 'charge' } @rows;
    my $csv = "id,type,payment_id,movement_id,currency,amount,fee,created_at,"
            . "payout_id\n"
            . join('', map { "g_$_->{id},payment,$_->{pi},,USD,"
                             . Mt5Credit::Settlement::major($_->{gross})
                             . ",0.00,"
                             . Mt5Credit::Settlement::utc($_->{at}) =~ s/ /T/r
                             . "Z,po_g\n" } @charges);
    my $sum = 0;
    $sum += $_->{gross} for @charges;
    my $control = "payout_id,currency,amount,count\npo_g,USD,"
        . Mt5Credit::Settlement::major($sum) . ',' . scalar(@charges) . "\n";
    my $file = $sb->write_file('generic.csv', $csv);
    my $cfile = $sb->write_file('generic-control.csv', $control);
    my @args = ('reconcile', '-c', $conf, '--provider', 'stripe', '--day',
                $day, '--tz', 'UTC', '--currency', 'USD', '--format',
                'generic', '--settlement', $file, '--control', $cfile);
    my ($grc, $gout) = Mt5Credit::Worker::run($sb, @args);
    like($gout, qr/^run (\d+): breaks/m,
         'a generic CSV is reconciled (payments only: refunds are missing)')
        or diag $gout;
    my ($grun) = $gout =~ /^run (\d+):/m;
    is($sb->sql1("SELECT n FROM mt5credit.recon_count WHERE run_id = "
                 . ($grun // 0) . " AND name = 'should_process'"),
       scalar(@charges), '... every payment row read');
    is($sb->sql1("SELECT count(*) FROM mt5credit.recon_item WHERE run_id = "
                 . ($grun // 0) . " AND kind = 'settled_not_credited'"), 1,
       '... keyed like the generic webhook: only the lost one is uncredited');

    $csv =~ s/,USD,120\.00,/,USD,120.00.0,/;
    $file = $sb->write_file('generic.csv', $csv);
    my $before = state_counts();
    ($grc, $gout) = Mt5Credit::Worker::run($sb, @args);
    is($grc, 2, 'a generic CSV with a bad amount: exit 2');
    like($gout, qr/line \d+: bad amount "120\.00\.0"/, '... naming it');
    is(state_counts(), $before, '... nothing written');
}

done_testing;
