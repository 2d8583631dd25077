#!/usr/bin/perl
#
# The reconciliation report writer (batch/recon/mc_recon_report.c) on hand-made
# runs in a throwaway PostgreSQL: breaks with hostile item keys and deal
# comments, incomplete, reconciled, one over the HTML's cap, one still
# running, one with a currency the database does not know.  A small C
# driver built from the report's sources calls mc_recon_report() as a role
# with only reconciliation's SELECT grants; the CSV and HTML are read
# back (with tidy, if installed, for HTML errors; with Chromium, the DOM
# after the page's script ran).  Impossible:
#   - markup, a control character or a bidi override from an item key or
#     a deal comment reaching the page as such
#   - an amount printed inexactly, or in the wrong currency's digits
#   - a half-written report file (temp name, then rename; none left after
#     a failure)
#   - a report of a run that is still running, or of an unknown currency
#   - a failed report breaking the caller's transaction
#   - an HTML page too big to open (capped, saying how many more rows
#     are in the CSV)
#
#   MT5CREDIT_KEEP=1 t/run-tests t/62_recon_report.t   keeps the reports
#   VALGRIND=1 t/run-tests t/62_recon_report.t         driver under valgrind

use strict;
use warnings;

use JSON::PP;
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $sb = Mt5Credit::Sandbox->new;
my $dir = $sb->dir;
my $out = "$dir/reports";
mkdir $out or die "$out: $!";

# --- the driver ---------------------------------------------------------

my $driver = "$dir/recon_report_driver";
open my $c, '>', "$driver.c" or die $!;
print $c <<'C';
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "mc_recon_report.h"

/* driver conninfo dir run...: one line per run, "ok id csv html" or
   "error id: why"; every run on the one connection.  With IN_TX set, all
   inside one transaction of the caller's, which must stay usable. */
int
main(int argc, char **argv)
{
    int        i, rc, in_tx;
    char       csv[4096], html[4096], err[1024];
    PGconn    *conn;
    PGresult  *res;

    if (argc < 4) {
        fprintf(stderr, "usage: %s conninfo dir run...\n", argv[0]);
        return 2;
    }

    conn = PQconnectdb(argv[1]);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "%s", PQerrorMessage(conn));
        return 2;
    }

    rc = 0;
    in_tx = getenv("IN_TX") != NULL;

    if (in_tx) {
        PQclear(PQexec(conn, "BEGIN"));
    }

    for (i = 3; i < argc; i++) {
        if (mc_recon_report(conn, strtoll(argv[i], NULL, 10), argv[2], csv,
                            html, sizeof(csv), err, sizeof(err)) != 0)
        {
            printf("error %s: %s\n", argv[i], err);
            rc = 1;
        } else {
            printf("ok %s %s %s\n", argv[i], csv, html);
        }

        res = PQexec(conn, "SELECT 1");
        printf("%s %s\n", PQresultStatus(res) == PGRES_TUPLES_OK
                          ? "usable" : "broken", argv[i]);
        PQclear(res);

        if (PQtransactionStatus(conn) != (in_tx ? PQTRANS_INTRANS
                                                : PQTRANS_IDLE))
        {
            printf("broken %s: transaction status\n", argv[i]);
        }
    }

    if (in_tx) {
        res = PQexec(conn, "COMMIT");
        printf("%s\n", PQresultStatus(res) == PGRES_COMMAND_OK
                       ? "committed" : "not committed");
        PQclear(res);
    }

    PQfinish(conn);
    return rc;
}
C
close $c;

# VALGRIND=1: every driver run under valgrind; its findings go to stderr
my $under = $ENV{VALGRIND}
    ? 'valgrind -q --leak-check=full --show-leak-kinds=definite,indirect ' : '';

my $cc = "cc -std=gnu99 -O2 -g -Wall -Wextra -Werror -Wshadow "
       . "-Wpointer-arith -Wstrict-prototypes -Wmissing-prototypes "
       . "-I$ROOT/batch/recon -I$ROOT/batch/lib -I/usr/include/postgresql -o $driver $driver.c "
       . "$ROOT/batch/recon/mc_recon_report.c $ROOT/batch/lib/mc_money.c "
       . "-lpq -ljansson 2>&1";
my $cc_out = `$cc`;
is($?, 0, 'the report and its driver build without warnings')
    or BAIL_OUT($cc_out);

# --- the runs -----------------------------------------------------------

$sb->start_postgres;
$sb->psql('CREATE ROLE reporter LOGIN IN ROLE mt5credit_recon');

my $json = JSON::PP->new->canonical->ascii;

sub q_ { my ($s) = @_; $s =~ s/'/''/g; return "'$s'" }

sub jb { defined $_[0] ? q_($json->encode($_[0])) . '::jsonb' : 'NULL' }

sub new_run {
    my (%r) = @_;
    my $tz = $r{tz} || 'America/New_York';
    my $day = $r{day} || '2024-03-10';
    return $sb->sql1(<<SQL);
INSERT INTO mt5credit.recon_run (provider, business_day, time_zone,
    currency, window_start, window_end, deal_window_end, settlement_format,
    settlement_sha256, control_sha256, verdict)
VALUES ('$r{provider}', '$day', '$tz', '$r{currency}',
        '$day'::timestamp AT TIME ZONE '$tz',
        ('$day'::date + 1)::timestamp AT TIME ZONE '$tz',
        ('$day'::date + 1)::timestamp AT TIME ZONE '$tz' + interval '2 hours',
        'stripe', repeat('a', 64), NULL, 'running')
RETURNING id
SQL
}

sub finish_run {
    my ($id, $verdict, %r) = @_;
    my $reason = defined $r{reason} ? q_($r{reason}) : 'NULL';
    my $digest = $verdict eq 'incomplete' ? 'NULL' : "repeat('b', 64)";
    my $prev = $r{previous} || 'NULL';
    $sb->psql(<<SQL);
UPDATE mt5credit.recon_run
SET verdict = '$verdict', reason = $reason, input_digest = $digest,
    finished_at = started_at + interval '93 seconds', previous_run_id = $prev
WHERE id = $id
SQL
}

sub counts {
    my ($id, %c) = @_;
    my @v;
    for my $dim (sort keys %c) {
        for my $name (sort keys %{ $c{$dim} }) {
            push @v, "($id, '$dim', '$name', $c{$dim}{$name})";
        }
    }
    $sb->psql("INSERT INTO mt5credit.recon_count (run_id, dimension, name, n) "
              . "VALUES " . join(', ', @v)) if @v;
}

my $case_seq = 0;

sub item {
    my ($id, %i) = @_;
    my $amount = defined $i{amount} ? $i{amount} : 'NULL';
    my $cur = defined $i{currency} ? q_($i{currency}) : 'NULL';
    my $dedupe = 'check:' . ++$case_seq;
    $sb->psql(<<SQL);
INSERT INTO mt5credit.recon_item (run_id, kind, item_key, severity, movement,
    amount_minor, currency, settlement, credit, deals, case_id)
VALUES ($id, '$i{kind}', @{[ q_($i{key}) ]}, '$i{severity}', '$i{movement}',
        $amount, $cur, @{[ jb($i{settlement}) ]}, @{[ jb($i{credit}) ]},
        @{[ jb($i{deals} || []) ]},
        mt5credit.open_case('$i{kind}', 'high', '$dedupe', '{}'))
SQL
}

my $settle1 = {
    row_id => 'txn_1', line_no => 2, category => 'payment',
    provider_key => 'pi_1', payment_id => 'pi_1', deposit_ref => 'dep:1',
    currency => 'USD', gross_minor => 10050, fee_minor => 320,
    net_minor => 9730, created_at => '2024-03-10T15:00:00+00:00',
    payout_id => 'po_1',
};
my $credit1 = {
    id => 1, reference => 'dep:1', kind => 'deposit', direction => 'credit',
    status => 'done', provider => 'stripe', provider_payment_id => 'pi_1',
    mt5_server => 'live1', mt5_login => 1001, amount_minor => 10000,
    currency => 'USD', paid_amount_minor => 10000, paid_currency => 'USD',
    mt5_deal_ticket => 5001, created_at => '2024-03-10T15:00:01+00:00',
};
my $deal1 = {
    mt5_server => 'live1', deal_ticket => 5001, mt5_login => 1001,
    amount_minor => 10000, currency => 'USD', comment => 'dep:1',
    deal_time => '2024-03-10T15:00:02+00:00',
};
my $nasty = qq{<script>alert(1)</script>, "q"; semi\nline & 'a' \x01 }
          . "\x{202e}rtl \x{85}c1 \x{fdd0} caf\x{e9}";
my $nasty_key = qq{deal:live1:9<b>"x"&'y'};
my $comma_key = qq{settlement:row,"x"\nnext};

my $ra = new_run(provider => 'stripe', currency => 'USD');
item($ra, kind => 'amount_mismatch', key => 'dep:1', severity => 'high',
     movement => 'payment', amount => 10050, currency => 'USD',
     settlement => $settle1, credit => $credit1, deals => [$deal1]);
item($ra, kind => 'credit_without_deal', key => 'dep:2',
     severity => 'critical', movement => 'payment', amount => 500,
     currency => 'USD',
     credit => { %$credit1, id => 2, reference => 'dep:2',
                 amount_minor => 500, paid_amount_minor => 500,
                 mt5_deal_ticket => 5002 });
item($ra, kind => 'deal_duplicate', key => 'dep:3', severity => 'critical',
     movement => 'payment', amount => 123456, currency => 'JPY',
     credit => { %$credit1, id => 3, reference => 'dep:3',
                 amount_minor => 123456, currency => 'JPY',
                 paid_amount_minor => 123456, paid_currency => 'JPY' },
     deals => [ { %$deal1, deal_ticket => 6001, amount_minor => 123456,
                  currency => 'JPY', comment => 'dep:3' },
                { %$deal1, deal_ticket => 6002, amount_minor => 123456,
                  currency => 'JPY', comment => 'dep:3;x' } ]);
item($ra, kind => 'deal_without_reference', key => $nasty_key,
     severity => 'medium', movement => 'unattributed', amount => 1234,
     currency => 'BHD',
     deals => [ { %$deal1, deal_ticket => 9, amount_minor => -1234,
                  currency => 'BHD', comment => $nasty } ]);
item($ra, kind => 'settled_not_credited', key => $comma_key,
     severity => 'high', movement => 'payment', amount => 5,
     currency => 'USD',
     settlement => { %$settle1, row_id => "row,\"x\"", gross_minor => -5,
                     fee_minor => 0, net_minor => -5 });
item($ra, kind => 'open_at_cutoff', key => 'dep:4', severity => 'low',
     movement => 'refund');
counts($ra,
       summary => { should_process => 20, matched => 12, pending => 1,
                    still_unknown => 0, mismatched => 5,
                    fixed_since_last_run => 2, deals => 18,
                    settlement_rows => 19 },
       kind => { amount_mismatch => 1, credit_without_deal => 1,
                 deal_duplicate => 1, deal_without_reference => 1,
                 settled_not_credited => 1, open_at_cutoff => 1 },
       matched => { payment => 10, refund => 2 },
       mismatched => { payment => 4, unattributed => 1 });
finish_run($ra, 'breaks');

my $rb = new_run(provider => 'stripe', currency => 'USD');
finish_run($rb, 'incomplete',
           reason => qq{settlement line 7: <bad> & "quoted"});

my $cr = new_run(provider => 'acme_pay-2', currency => 'EUR',
                 tz => 'Europe/London', day => '2024-03-31');
counts($cr, summary => { should_process => 3, matched => 3, pending => 0,
                         still_unknown => 0, mismatched => 0,
                         fixed_since_last_run => 0, deals => 3,
                         settlement_rows => 3 },
       matched => { payment => 3 });
finish_run($cr, 'reconciled', previous => $ra);

my $big_n = 6001;
my $d = new_run(provider => 'stripe', currency => 'USD', day => '2024-03-11');
$sb->psql(<<SQL);
INSERT INTO mt5credit.recon_item (run_id, kind, item_key, severity, movement,
    amount_minor, currency, settlement, credit, deals, case_id)
SELECT $d, 'amount_mismatch', 'dep:' || lpad(i::text, 6, '0'), 'high',
       'payment', i, 'USD',
       jsonb_build_object('row_id', 'txn_' || i, 'line_no', i + 1,
                          'category', 'payment', 'currency', 'USD',
                          'gross_minor', i, 'fee_minor', 0, 'net_minor', i),
       NULL, '[]', mt5credit.open_case('amount_mismatch', 'high', 'big', '{}')
FROM generate_series(1, $big_n) i
SQL
counts($d, summary => { mismatched => $big_n },
       kind => { amount_mismatch => $big_n },
       mismatched => { payment => $big_n });
finish_run($d, 'breaks');

my $e = new_run(provider => 'stripe', currency => 'USD', day => '2024-03-12');

my $f = new_run(provider => 'stripe', currency => 'USD', day => '2024-03-13');
item($f, kind => 'amount_mismatch', key => 'dep:9', severity => 'high',
     movement => 'payment', amount => 1, currency => 'XXX');
finish_run($f, 'breaks');

# deals whose comments a spreadsheet would run as formulas (CSV injection)
my @formulas = ('=HYPERLINK("http://evil.example/","statement")',
                '+1+cmd|\' /C calc\'!A0', '@SUM(1+1)*cmd|\'/C calc\'!A0',
                "\t=1+1", '-2+3+cmd|\' /C calc\'!A0');
my $g = new_run(provider => 'stripe', currency => 'USD', day => '2024-03-14');
for my $k (0 .. $#formulas) {
    item($g, kind => 'deal_without_reference', key => "deal:live1:70$k",
         severity => 'medium', movement => 'unattributed', amount => 1250,
         currency => 'USD',
         deals => [ { %$deal1, deal_ticket => 700 + $k, amount_minor => -1250,
                      comment => $formulas[$k] } ]);
}
finish_run($g, 'breaks');

# --- the reports --------------------------------------------------------

my $conninfo = "host=127.0.0.1 port=" . $sb->pg_port
             . " dbname=mt5credit user=reporter";
my @runs = ($ra, $rb, $cr, $d, $e, $f, $g, 999999, $ra);
my %ran;
my @lines = `$under$driver '$conninfo' $out @runs`;
for my $line (@lines) {
    chomp $line;
    $ran{$1} = $2 if $line =~ /^ok (\d+) (.*)/;
    $ran{$1} = "error: $2" if $line =~ /^error (\d+): (.*)/;
}
is(scalar(grep { /^usable/ } @lines), scalar @runs,
   'the connection is idle and usable after every report, failed or not');

{
    my $tx_out = "$dir/reports-tx";
    mkdir $tx_out or die $!;
    my @tx = `IN_TX=1 $under$driver '$conninfo' $tx_out $e $ra $f $rb`;
    is(join('', grep { /^(?:usable|broken|committed|not)/ } @tx),
       "usable $e\nusable $ra\nusable $f\nusable $rb\ncommitted\n",
       'inside a transaction of the caller\'s, which a failure does not '
       . 'break') or diag(@tx);
    ok(-s "$tx_out/recon-stripe-2024-03-10-USD-run$ra.html",
       'and the report is written there too');

    # an error of the database's own, inside the caller's transaction
    $sb->psql('CREATE ROLE stranger LOGIN');
    (my $stranger = $conninfo) =~ s/user=reporter/user=stranger/;
    my @denied = `IN_TX=1 $under$driver '$stranger' $tx_out $ra`;
    like($denied[0], qr/^error $ra: run $ra: reading the run: permission denied for schema mt5credit$/,
         'a role without the grants gets the database\'s reason');
    is(join('', @denied[1 .. $#denied]), "usable $ra\ncommitted\n",
       'and its transaction goes on');
}

my $base = "recon-stripe-2024-03-10-USD-run$ra";
is($ran{$ra}, "$out/$base.csv $out/$base.html",
   'the breaks run: both files, named by provider, day, currency, run');
like($ran{$rb}, qr/^\S+run$rb\.csv /, 'the incomplete run has a report');
like($ran{$cr}, qr{/recon-acme_pay-2-2024-03-31-EUR-run$cr\.html$},
     'the reconciled run too');
like($ran{$e}, qr/error: .*not finished/, 'a running run has none');
like($ran{$f}, qr/error: .*item amount_mismatch dep:9: .*"XXX" is not in/,
     'an unknown currency fails the report, naming the item');
like($ran{999999}, qr/error: run 999999 does not exist/,
     'so does a run that does not exist');
ok(!-e "$out/recon-stripe-2024-03-13-USD-run$f.csv"
   && !-e "$out/recon-stripe-2024-03-13-USD-run$f.html",
   'a failed report leaves no file behind');
is_deeply([ grep { /^\./ } map { s{.*/}{}r } glob("$out/.*.tmp") ], [],
          'and no temp file');

sub slurp { local $/; open my $fh, '<:raw', $_[0] or die "$_[0]: $!"; <$fh> }

# RFC 4180, strictly: CRLF line ends, quotes only around whole fields
sub parse_csv {
    my ($text) = @_;
    my (@rows, @row, $field);
    pos($text) = 0;
    while (pos($text) < length $text) {
        if ($text =~ /\G"((?:[^"]|"")*)"/gc) {
            ($field = $1) =~ s/""/"/g;
        } elsif ($text =~ /\G([^",\r\n]*)/gc) {
            $field = $1;
        }
        push @row, $field;
        if ($text =~ /\G,/gc) { next }
        if ($text =~ /\G\r\n/gc) { push @rows, [@row]; @row = (); next }
        die 'bad CSV at ' . pos($text);
    }
    return \@rows;
}

{
    my $csv = slurp("$out/$base.csv");
    utf8::decode($csv);
    my $rows = parse_csv($csv);
    my @head = @{ shift @$rows };
    is(join(',', @head), 'run_id,kind,severity,movement,item_key,amount,'
       . 'currency,case_id,settlement_row,settlement_line,settlement_category,'
       . 'settlement_gross,settlement_currency,credit_reference,credit_status,'
       . 'credit_login,credit_amount,credit_currency,deal_tickets,deal_logins,'
       . 'deal_amounts,deal_comments,since_day,age_days', 'the CSV header');
    my @recs = map { my %h; @h{@head} = @$_; \%h } @$rows;
    is(scalar @recs, 6, 'one line per item');
    is(join(' ', map { $_->{kind} } @recs),
       'credit_without_deal deal_duplicate amount_mismatch '
       . 'settled_not_credited deal_without_reference open_at_cutoff',
       'ordered by severity, then kind');
    my %by = map { $_->{item_key} => $_ } @recs;
    is($by{'dep:1'}{amount}, '100.50', 'USD in cents, exactly');
    is($by{'dep:1'}{settlement_gross}, '100.50', 'the settlement gross');
    is($by{'dep:1'}{settlement_row}, 'txn_1', 'its row');
    is($by{'dep:1'}{settlement_line}, '2', 'its line');
    is($by{'dep:1'}{credit_amount}, '100.00', 'the credit amount');
    is($by{'dep:1'}{credit_login}, '1001', 'its login');
    is($by{'dep:1'}{deal_tickets}, '5001', 'the deal');
    is($by{'dep:3'}{amount}, '123456', 'JPY has no decimals');
    is($by{'dep:3'}{deal_tickets}, '6001;6002', 'two deals, joined by ;');
    is($by{'dep:3'}{deal_amounts}, '123456;123456', 'their amounts');
    is($by{'dep:3'}{deal_comments}, 'dep:3;dep:3;x', 'their comments');
    is($by{$nasty_key}{amount}, '1.234', 'BHD has three');
    is($by{$nasty_key}{deal_amounts}, '-1.234', 'a debit deal is negative');
    is($by{$nasty_key}{deal_comments}, $nasty,
       'a hostile comment comes back exactly');
    is($by{$comma_key}{settlement_gross}, '-0.05', 'a small negative');
    is($by{$comma_key}{settlement_row}, 'row,"x"', 'a quoted row id');
    is($by{'dep:4'}{amount}, '', 'no amount: an empty field');
    is($by{'dep:4'}{run_id}, $ra, 'the run id on every line');
    like($by{'dep:4'}{case_id}, qr/^\d+$/, 'the case id');
}

{
    my ($csv) = split / /, $ran{$g};
    my $text = slurp($csv);
    utf8::decode($text);
    my $rows = parse_csv($text);
    my @head = @{ shift @$rows };
    my %by = map { my %h; @h{@head} = @$_; ($h{item_key} => \%h) } @$rows;
    is(join(' | ', map { $by{"deal:live1:70$_"}{deal_comments} }
                   0 .. $#formulas),
       join(' | ', map { "'$_" } @formulas),
       'a comment a spreadsheet would run (= + - @ tab first) is text: an '
       . 'apostrophe first');
    is(join(' ', map { $by{"deal:live1:70$_"}{deal_amounts} } 0 .. $#formulas),
       join(' ', ('-12.50') x @formulas),
       '... while an amount, -12.50, stays a number');
}

{
    my ($csv, $html) = split / /, $ran{$d};
    my @lines = split /\r\n/, slurp($csv);
    is(scalar @lines, $big_n + 1, 'the big run: every item in the CSV');
    my $page = slurp($html);
    my $rows = () = $page =~ /<tr class="item"/g;
    is($rows, 5000, 'the HTML stops at 5000');
    like($page, qr/<p id="more" class="more" data-more="1001">1001 more items are/,
         'and says how many more are only in the CSV');
}

my $html = slurp("$out/$base.html");
utf8::decode($html);

like($html, qr{<title>Reconciliation stripe 2024-03-10 USD \x{2014} run $ra</title>},
     'the title');
like($html, qr/<div id="verdict" class="verdict breaks"/, 'the verdict');
like($html, qr/<tr data-name="fixed_since_last_run"><th>fixed since last run<\/th><td class="n num">2</,
     'a summary count');
like($html, qr/<g class="bar" data-movement="payment" data-matched="10" data-mismatched="4">/,
     'the payment bar');
like($html, qr/<g class="bar" data-movement="unattributed" data-matched="0" data-mismatched="1">/,
     'the unattributed bar');
unlike($html, qr/data-movement="chargeback"/, 'no bar without counts');
like($html, qr/matched 10 \/ mismatched 4/, 'a bar label');
like($html, qr/<tr class="item" data-kind="deal_without_reference" data-key="deal:live1:9&lt;b&gt;&quot;x&quot;&amp;&#39;y&#39;"/,
     'a hostile key, escaped in its attribute');
unlike($html, qr/<script>alert/, 'a hostile comment opens no tag');
like($html, qr/&lt;script&gt;alert\(1\)&lt;\/script&gt;, &quot;q&quot;; semi\nline &amp; &#39;a&#39; \x{fffd} \x{fffd}rtl \x{fffd}c1 \x{fffd} caf\x{e9}/,
     'it is all there, escaped, controls replaced');
like($html, qr/<td class="settlement missing">none<\/td>/, 'a missing record');
like($html, qr/<dd data-field="gross_minor" class="num">100.50 USD<\/dd>/,
     'a settlement amount');
like($html, qr/<dd data-field="amount_minor" class="num">-1.234 BHD<\/dd>/,
     'a deal amount');
unlike($html, qr/(?:src|href)="(?:https?:)?\/\//, 'nothing external');
like($html, qr/<tr data-field="window_start"><th>window start<\/th><td><time datetime="2024-03-10T05:00:00Z">2024-03-10 00:00:00<\/time> America\/New_York/,
     'the window in the run\'s time zone');
like($html, qr/<tr data-field="window_end"><th>window end<\/th><td><time datetime="2024-03-11T04:00:00Z">2024-03-11 00:00:00<\/time>/,
     'a 23-hour day ends at 04:00 UTC');

my $inc = slurp((split / /, $ran{$rb})[1]);
like($inc, qr/<div id="verdict" class="verdict incomplete" data-verdict="incomplete"><span class="word">incomplete<\/span>: <span class="reason">settlement line 7: &lt;bad&gt; &amp; &quot;quoted&quot;<\/span>/,
     'incomplete, with its reason');
like($inc, qr/<tr data-name="matched"><th>matched<\/th><td class="n num none">/,
     'an incomplete run counted nothing');

my $rec = slurp((split / /, $ran{$cr})[1]);
like($rec, qr/<a href="recon-stripe-2024-03-10-USD-run$ra.html">run $ra<\/a>/,
     'the previous run, linked');
like($rec, qr/<tr class="none"><td colspan="6">No differences.<\/td><\/tr>/,
     'no differences');

SKIP: {
    skip 'tidy is not installed', 1 unless -x '/usr/bin/tidy';
    my @bad;
    for my $file (glob("$out/*.html")) {
        my $msgs = `tidy -q -e --show-warnings yes $file 2>&1`;
        # tidy 5.6 does not know some of SVG inside HTML
        # (SVG's attributes), nor that an empty <tbody> is valid HTML5
        my @m = grep { !/<title> proprietary attribute "id"|<svg> proprietary attribute "font-size"|trimming empty <tbody>/ }
                split /\n/, $msgs;
        push @bad, map { "$file: $_" } grep { /Error|Warning/ } @m;
    }
    is_deeply(\@bad, [], 'tidy finds no error in any report');
}

SKIP: {
    my ($chromium) = grep { -x } '/usr/bin/chromium', '/usr/bin/chromium-browser';
    skip 'chromium is not installed', 8 unless $chromium;
    my $dom = `$chromium --headless --no-sandbox --disable-gpu --user-data-dir=$dir/chromium --dump-dom file://$out/$base.html 2>/dev/null`;
    utf8::decode($dom);
    for my $id (qw(verdict summary chart kinds mismatches kind-filter)) {
        like($dom, qr/id="$id"/, "the DOM has #$id") if $id ne 'kind-filter';
    }
    like($dom, qr/<p id="kind-filter-box"><label/,
         'the script showed the kind filter');
    my $items = () = $dom =~ /<tr class="item"/g;
    is($items, 6, 'every item is a row');

    # the filter, driven by a copy of the page with one more script
    (my $page = slurp("$out/$base.html")) =~ s{</body>}{<script>
var s = document.getElementById('kind-filter');
s.value = 'deal_duplicate';
s.dispatchEvent(new Event('change'));
</script>
</body>};
    open my $fh, '>:raw', "$dir/filtered.html" or die $!;
    print $fh $page;
    close $fh;
    $dom = `$chromium --headless --no-sandbox --disable-gpu --user-data-dir=$dir/chromium --dump-dom file://$dir/filtered.html 2>/dev/null`;
    my @shown = $dom =~ /<tr class="item" data-kind="([a-z_]+)"[^>]*?(?<!hidden="")>/g;
    my @hidden = $dom =~ /<tr class="item" data-kind="([a-z_]+)"[^>]* hidden="">/g;
    is("@shown", 'deal_duplicate', 'choosing a kind shows its rows');
    is(scalar @hidden, 5, 'and hides the others');
}

done_testing;
