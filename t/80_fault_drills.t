#!/usr/bin/perl
#
# The fault drills (seed design document 001, 故障演练) and the failure
# table's rows (seed document 000), each on the whole system: signed webhooks
# through nginx with the module, PostgreSQL, Redis, the worker, the MT5
# Web API simulator over HTTPS, and reconciliation.  After each, the state
# is read back: credit statuses and history, deals in the simulator's
# ledger, cases.  Impossible:
#   1. one payment credited twice when its webhook comes ten times
#   2. a deposit going backwards when a failure arrives after the success,
#      or a refund debited before the payment it undoes was credited
#   3. a worker killed mid-call losing the outcome, or making a second
#      deal on restart
#   4. a webhook whose amount is not the deposit's crediting anything
#   5. a payment the provider settled that we never heard of passing
#      reconciliation unnoticed
#   6. one refund debited twice when its webhook comes twice
#   7. a settlement file cut off mid-way being reconciled as if whole, or
#      leaving a run that blocks the re-run
#   8. the return page (the redirect, before or after the webhook) moving
#      money, or reading "credited" before the deal is made
#   9. an MT5 answer about another login completing a credit

use strict;
use warnings;

use POSIX qw(strftime);
use Test::More;

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Settlement;
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
my $conf = Mt5Credit::Worker::config($sb, 'drill-recon',
    servers => [ [ 'live1', $sim, recon_groups => 'real\\usd' ] ], %fast,
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    # the day alone (a settled payment we never heard of is a break on
    # the day; waiting for a partner on another day is t/65's)
    recon_out => $sb->dir, recon_match_window => 0);
$st->account(login => 78001);
$st->account(login => 78002);
$st->start_worker('w1', %fast);

my $n = 0;

sub deposit {
    my (%d) = @_;
    return $sb->create_deposit(client => 'alice', login => $d{login} || 78001,
                               amount => $d{amount} || 10000,
                               key => 'drill-deposit-' . ++$n);
}

sub credit_of {
    my ($ref) = @_;
    return $sb->sql1("SELECT c.id FROM mt5credit.mt5_credit c JOIN "
                     . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
                     . "d.reference = '$ref' AND c.kind = 'deposit'");
}

sub count_sql { $sb->sql1("SELECT count(*) FROM $_[0]") }

sub cases_kind {
    count_sql("mt5credit.case WHERE kind = '$_[0]'"
              . ($_[1] ? " AND $_[1]" : ''))
}

sub history { join ' ', @{ $st->history_of($_[0]) } }

# --- drill 1: the same success webhook, ten times ----------------------------------

subtest 'drill 1: the same webhook ten times is one credit, one deal' => sub {
    my $ref = deposit(amount => 12300);
    my $body = stripe_event(deposit => $ref, amount => 12300,
                            pi => 'pi_drill_1', id => 'evt_drill_1');
    my @status = map { $st->webhook($body)->{status} } 1 .. 10;
    is(join(',', @status), join(',', (200) x 10),
       'every delivery is acknowledged (so the provider stops)');
    is(count_sql("mt5credit.webhook_event WHERE provider_event_id = "
                 . "'evt_drill_1'"), 1, 'one event stored');
    my $id = credit_of($ref);
    ok($st->wait_status($id, 'done'), 'one credit, made');
    is(count_sql("mt5credit.mt5_credit WHERE provider_payment_id = "
                 . "'pi_drill_1'"), 1, 'exactly one credit intent');
    is(scalar @{ $st->deals_of($id) }, 1, 'exactly one deal');
    is(history($id), '->pending pending>claimed claimed>done',
       'history: created, claimed, done, once each');
};

# --- drill 2: out of order: a failure after the success ----------------------------

subtest 'drill 2: a late failure never moves a deposit backwards' => sub {
    my $ref = deposit(amount => 4500);
    is($st->webhook(stripe_event(deposit => $ref, amount => 4500,
                                 pi => 'pi_drill_2'))->{status}, 200,
       'paid');
    my $id = credit_of($ref);
    ok($st->wait_status($id, 'done'), 'credited');
    is($st->webhook(stripe_event(
           type => 'checkout.session.async_payment_failed',
           payment_status => 'unpaid', deposit => $ref,
           pi => 'pi_drill_2'))->{status}, 200,
       'a failure for the same payment arrives late');
    is($sb->sql1("SELECT status FROM mt5credit.deposit WHERE reference = "
                 . "'$ref'"), 'succeeded', 'the deposit stays succeeded');
    is($st->status_of($id), 'done', 'the credit stays done');
    is(scalar @{ $st->deals_of($id) }, 1, 'one deal, untouched');
    is(count_sql("mt5credit.deposit_conflict c JOIN mt5credit.deposit d ON "
                 . "d.id = c.deposit_id WHERE d.reference = '$ref'"), 1,
       'the conflict is recorded');
    is(cases_kind('deposit_status_conflict', "deposit_id = (SELECT id FROM "
                  . "mt5credit.deposit WHERE reference = '$ref')"), 1,
       '... with a case for a person');

    # a refund that overtakes its payment
    my $ref2 = deposit(amount => 3000);
    is($st->webhook(stripe_event(type => 'charge.refunded',
                                 pi => 'pi_drill_2b', amount => 3000))
       ->{status}, 200, 'a refund arrives before its payment');
    is(count_sql("mt5credit.case WHERE kind LIKE 'refund%_without_credit'"), 1,
       '... a case, and no debit of money never credited');
    is(count_sql("mt5credit.mt5_credit WHERE kind = 'refund' AND "
                 . "original_credit_id IS NULL"), 0, '... no orphan debit');
};

# --- drill 3: the worker killed before it answers -----------------------------------

subtest 'drill 3: a worker killed mid-call is recovered by lookup' => sub {
    # a call timeout long enough to kill the worker inside it
    $st->stop_worker('w1');
    $st->start_worker('w1', call_timeout => 3, lease => 14,
                      settle_margin => 1);
    $sim->fault(kind => 'hang_after', endpoint => '/api/trade/balance');
    my $ref = deposit(amount => 6600);
    $st->webhook(stripe_event(deposit => $ref, amount => 6600,
                              pi => 'pi_drill_3'));
    my $id = credit_of($ref);
    ok(Mt5Credit::Worker::wait_for(sub { scalar @{ $st->deals_of($id) } == 1 }, 20),
       'MT5 executed the deal, the answer hangs');
    $st->kill_worker('w1');
    is($st->status_of($id), 'claimed', 'the worker dies with it claimed');
    $sim->clear_faults;
    $st->start_worker('w1', %fast);
    ok($st->wait_status($id, 'done', 40), 'restarted: found by lookup, done');
    is(scalar @{ $st->deals_of($id) }, 1, 'still exactly one deal');
    is($st->credit($id)->{attempts}, 1, 'no second attempt was made');
    like(history($id), qr/claimed>unknown unknown>done$/,
         'history: the expired lease is unknown, then found');
};

# --- drill 4: the amount differs from the deposit ------------------------------------

subtest 'drill 4: a webhook with another amount credits nothing' => sub {
    my $before = cases_kind('amount_mismatch');
    my $ref = deposit(amount => 10000);
    is($st->webhook(stripe_event(deposit => $ref, amount => 100000,
                                 pi => 'pi_drill_4'))->{status}, 200,
       'the webhook is stored and acknowledged');
    is(credit_of($ref), undef, 'no credit');
    is(cases_kind('amount_mismatch') - $before, 1, 'a case for a person');
};

# --- drill 6: a refund webhook twice -------------------------------------------------

subtest 'drill 6: a refund delivered twice is one debit' => sub {
    my $ref = deposit(amount => 8000);
    $st->webhook(stripe_event(deposit => $ref, amount => 8000,
                              pi => 'pi_drill_6', charge => 'ch_drill_6'));
    my $id = credit_of($ref);
    ok($st->wait_status($id, 'done'), 'the payment is credited');
    my $refund = stripe_event(type => 'charge.refunded', pi => 'pi_drill_6',
                              charge => 'ch_drill_6', amount => 8000);
    is($st->webhook($refund)->{status}, 200, 'the refund');
    is($st->webhook($refund)->{status}, 200, 'the same refund again');
    is($st->webhook(stripe_event(type => 'charge.refunded',
                                 pi => 'pi_drill_6', charge => 'ch_drill_6',
                                 amount => 8000))->{status}, 200,
       'and once more under another event id');
    my $rid = $sb->sql1("SELECT id FROM mt5credit.mt5_credit WHERE "
                        . "original_credit_id = $id");
    is(count_sql("mt5credit.mt5_credit WHERE original_credit_id = $id"), 1,
       'one refund record');
    ok($st->wait_status($rid, 'done'), 'made');
    is(scalar @{ $st->deals_of($rid) }, 1, 'exactly one debit deal');
    is($st->deals_of($rid)->[0]{Profit}, '-80.00', '... of 80.00');
};

# --- drill 8: the redirect, before and after the webhook ------------------------------

subtest 'drill 8: the return page only reads' => sub {
    my $ref = deposit(amount => 2500);
    my $page = sub {
        my $r = $sb->psql("SELECT status, coalesce(credit_status, '-'), "
            . "credited FROM mt5credit.deposit_status('alice', '$ref')",
            user => 'portal');
        return join ' ', @{ $r->[0] };
    };
    is($page->(), 'created - f', 'redirect before the webhook: not credited');
    like($sb->psql("SELECT * FROM mt5credit.ingest('stripe', NULL, "
                   . "'\\x00'::bytea, 'stripe', 0)", user => 'portal',
                   may_fail => 1), qr/permission denied/,
         'the portal cannot feed an event in');
    like($sb->psql("UPDATE mt5credit.deposit SET status = 'succeeded' "
                   . "WHERE reference = '$ref'", user => 'portal',
                   may_fail => 1), qr/permission denied/,
         '... nor mark a deposit paid');
    $st->webhook(stripe_event(deposit => $ref, amount => 2500,
                              pi => 'pi_drill_8'));
    my $id = credit_of($ref);
    ok($st->wait_status($id, 'done'), 'the webhook credits it');
    is($page->(), 'succeeded done t', 'a redirect after it: credited');
    is(scalar @{ $st->deals_of($id) }, 1, 'one deal, whatever the page was asked');
};

# --- drill 9: an answer about another login -------------------------------------------

subtest 'drill 9: an answer about another login never completes a credit' => sub {
    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance',
                count => 1);
    my $ref = deposit(login => 78002, amount => 7700);
    $st->webhook(stripe_event(deposit => $ref, amount => 7700,
                              pi => 'pi_drill_9'));
    my $id = credit_of($ref);
    ok($st->wait_status($id, 'unknown', 20), 'the call is dropped: unknown');
    $sim->fault(kind => 'wrong_login', endpoint => '/api/deal/get_page',
                count => 0);
    ok(Mt5Credit::Worker::wait_for(sub {
           grep { $_ eq 'mt5_no_answer' } @{ $st->cases_of($id) } }, 30),
       'deal lists about another login are no answer: a case');
    is($st->status_of($id), 'unknown', '... and the credit stays unknown');
    $sim->clear_faults;
    ok($st->wait_status($id, 'done', 40), 'a trusted answer later: done');
    my $d = $st->deals_of($id);
    is(scalar @$d, 1, 'one deal');
    is($d->[0]{Login}, 78002, '... on the right login');
};

$st->stop_worker('w1');

# --- drills 5 and 7: reconciliation ---------------------------------------------------

my $day = strftime('%Y-%m-%d', gmtime);
my @rows;
my $seq = 0;
for my $c (@{ $sb->psql("SELECT provider_payment_id, paid_amount_minor "
                        . "FROM mt5credit.mt5_credit WHERE kind = 'deposit' "
                        . "AND status = 'done' ORDER BY id") }) {
    push @rows, { id => 'txn_drill_' . ++$seq, category => 'charge',
                  pi => $c->[0], source => "ch_$c->[0]", gross => $c->[1],
                  at => time };
}
for my $r (@{ $sb->psql("SELECT c.provider_payment_id, c.paid_amount_minor, "
                        . "o.provider_payment_id FROM mt5credit.mt5_credit c "
                        . "JOIN mt5credit.mt5_credit o ON o.id = "
                        . "c.original_credit_id WHERE c.kind = 'refund'") }) {
    push @rows, { id => 'txn_drill_' . ++$seq, category => 'refund',
                  pi => $r->[2], source => $r->[0], gross => -$r->[1],
                  at => time };
}
# drill 5: a payment settled that no webhook ever told us about
push @rows, { id => 'txn_drill_stray', category => 'charge',
              pi => 'pi_never_heard_of', source => 'ch_never', gross => 4200,
              at => time };

sub reconcile {
    my ($csv, $control) = @_;
    my $f = $sb->write_file('drill-settlement.csv', $csv);
    my $c = $sb->write_file('drill-control.csv', $control);
    return Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
        '--provider', 'stripe', '--day', $day, '--tz', 'UTC',
        '--currency', 'USD', '--format', 'stripe', '--settlement', $f,
        '--control', $c);
}

my $full = Mt5Credit::Settlement::stripe_csv(\@rows);
my $control = Mt5Credit::Settlement::control_csv(\@rows);

subtest 'drill 7: a settlement file cut off mid-way fails, and can be re-run' => sub {
    my $runs = count_sql("mt5credit.recon_run WHERE verdict <> 'incomplete'");
    my $items = count_sql('mt5credit.recon_item');

    # cut inside a record: the file is refused, naming the line
    my $cut = substr($full, 0, int(length($full) * 0.6));
    my ($rc, $out) = reconcile($cut, $control);
    is($rc, 2, 'cut inside a record: refused (exit 2)') or diag $out;
    like($out, qr/line \d+/, '... naming the line');

    # cut at a line: every row parses, the control totals do not add up
    my $lines = Mt5Credit::Settlement::stripe_csv([ @rows[0 .. $#rows - 1] ]);
    ($rc, $out) = reconcile($lines, $control);
    is($rc, 3, 'the last line missing: incomplete (exit 3)') or diag $out;
    like($out, qr/control|payout/i, '... the control totals say so');

    is(count_sql('mt5credit.recon_item'), $items, 'no item written');
    is(count_sql("mt5credit.recon_run WHERE verdict <> 'incomplete'"), $runs,
       '... and no finished run');
    ($rc, $out) = reconcile($full, $control);
    like($out, qr/^run \d+: (breaks|reconciled)/m,
         'the whole file, re-run: reconciled to a verdict') or diag $out;
};

subtest 'drill 5: a settled payment we never heard of is a high case' => sub {
    my $r = $sb->psql("SELECT kind, severity FROM mt5credit.recon_item "
                      . "WHERE settlement->>'provider_key' = "
                      . "'pi_never_heard_of'");
    is(scalar @$r, 1, 'one item for it');
    is(join(' ', @{ $r->[0] || [] }), 'settled_not_credited high',
       '... settled_not_credited, high');
    is(cases_kind('settled_not_credited', "severity = 'high'"), 1,
       '... and a case for a person');
    is(count_sql("mt5credit.recon_item i JOIN mt5credit.recon_run r ON "
                 . "r.id = i.run_id WHERE r.id = (SELECT max(id) FROM "
                 . "mt5credit.recon_run) AND i.kind <> 'settled_not_credited'"
                 . " AND i.kind <> 'open_at_cutoff'"), 0,
       'nothing else of the drills is a break: all the rest agrees');
};

done_testing;
