#!/usr/bin/perl
#
# What is kept, for how long (issue 31, item 6; sql/070).  On 29185f3 raw
# webhook bodies, which carry personal data, were kept for ever, and
# reconciliation reports piled up without bound.  This makes impossible:
#   - an old body kept for ever: past --days its bytes are emptied, its
#     digest and everything ingest() decided kept
#   - a body removed that something still needs: an open case on the
#     event or its credit, an unfinished credit, anything younger than 90
#     days (reconciliation looks back 62 and replays settled events)
#   - an event changed any other way, or a body redacted twice
#   - a report removed before its days, or a file that is not one
#   - anyone but mt5credit_retention doing it
#   - a malformed delivery's body kept for ever (074; on 3998e8d
#     webhook_malformed was not touched by retention): past --days since
#     its last delivery it is emptied once, its digest, reason and count
#     kept; delivered again, it is counted under its digest and its bytes
#     are not stored again
#   - a payer's name kept on a credit after its event's body is gone (090;
#     on 56fe581 the name the provider signed stayed on the credit for
#     ever): erased with the body, once, and never written back or
#     changed otherwise; a name whose body is kept (an open case, an
#     unfinished credit) stays

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 71401);
$sb->psql('CREATE ROLE keeper LOGIN IN ROLE mt5credit_retention');

my @ids = map { $st->pay(login => 71401, amount => 1400 + $_) } 1 .. 4;
$st->start_worker('w1');
ok(Mt5Credit::Worker::wait_for(sub {
       !grep { $st->status_of($_) ne 'done' } @ids }, 30), 'four credited');
$st->stop_worker('w1');
# and one not yet
my $pending = $st->pay(login => 71401, amount => 1499);

sub event_of {
    $sb->sql1("SELECT id FROM mt5credit.webhook_event WHERE credit_id = $_[0]");
}
my %ev = map { $_ => event_of($_) } @ids, $pending;

# as if received long ago: 500 days for all but the last (100 days), a
# fixture written past the guard
$sb->psql("SET session_replication_role = replica; "
          . "UPDATE mt5credit.webhook_event SET received_at = now() - "
          . "interval '500 days' WHERE id IN ($ev{$ids[0]}, $ev{$ids[1]}, "
          . "$ev{$ids[2]}, $ev{$pending}); "
          . "UPDATE mt5credit.webhook_event SET received_at = now() - "
          . "interval '100 days' WHERE id = $ev{$ids[3]}");
# an open case on the second's credit
$sb->psql("SELECT mt5credit.open_case('deposit_status_conflict', 'high', "
          . "'t14', '{}', $ids[1])");

# two signed deliveries that are no event (no id): one last delivered
# 500 days ago, one now
my @bad = ('{"object": "event", "note": "old, no id"}',
           '{"object": "event", "note": "new, no id"}');
is(join(' ', map { $st->webhook($_)->{status} } @bad), '400 400',
   'two malformed deliveries: answered 400, kept');
$sb->psql("SET session_replication_role = replica; "
          . "UPDATE mt5credit.webhook_malformed SET last_received_at = now() "
          . "- interval '500 days' WHERE raw_body = convert_to('$bad[0]', "
          . "'UTF8')");
# its body's length, redacted or not, and deliveries, by its digest
my $malformed = sub {
    $sb->sql1("SELECT length(raw_body) || ' ' || (body_redacted_at IS NOT "
              . "NULL) || ' ' || deliveries FROM mt5credit.webhook_malformed "
              . "WHERE body_sha256 = sha256(convert_to('$_[0]', 'UTF8'))");
};

# the payer's name as the payer_name rule keeps it (082), planted past
# the guard on the credits of the events to be emptied, kept for a case,
# and not finished
$sb->psql("SET session_replication_role = replica; "
          . "UPDATE mt5credit.mt5_credit SET payer_name = 'Ann Marie Smith' "
          . "WHERE id IN ($ids[0], $ids[1], $pending)");
my $payer = sub {
    $sb->sql1("SELECT coalesce(payer_name, '-') || ' ' "
              . "|| (payer_name_erased_at IS NOT NULL) "
              . "FROM mt5credit.mt5_credit WHERE id = $_[0]");
};

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
my $digests = sub {
    $sb->sql1("SELECT string_agg(encode(body_sha256, 'hex'), ',' ORDER BY id)"
              . " FROM mt5credit.webhook_event");
};
my $before = $digests->();

my ($rc, $out) = Mt5Credit::Worker::run($sb, 'retention', '--database',
                                        "$db user=keeper", '--days', '30');
is($rc, 1, 'fewer than 90 days: refused');
like($out, qr/bodies are kept 90 to 3650 days, not 30/, '... saying why');

($rc, $out) = Mt5Credit::Worker::run($sb, 'retention', '--database',
                                     "$db user=worker", '--days', '400');
is($rc, 1, 'the worker may not');
like($out, qr/permission denied for function retention_redact/, '... denied');

($rc, $out) = Mt5Credit::Worker::run($sb, 'retention', '--database',
                                     "$db user=keeper", '--days', '400');
is($rc, 0, 'mt5credit retention --days 400') or diag $out;
like($out, qr/retention: 2 webhook bodies older than 400 days emptied .*, 1 kept for open cases/,
     '... empties two bodies, keeps one for its open case');
like($out, qr/and 1 malformed deliveries emptied/,
     '... and the malformed delivery last delivered 500 days ago');
like($out, qr/, 1 payers' names erased/, '... and one payer\'s name');
is($payer->($ids[0]), '- true', 'the name on the credit whose body was '
   . 'emptied: erased, and when said');
is($payer->($ids[1]), 'Ann Marie Smith false',
   '... on the one whose body an open case keeps: kept');
is($payer->($pending), 'Ann Marie Smith false',
   '... on the unfinished one: kept');
like($sb->psql("UPDATE mt5credit.mt5_credit SET payer_name = 'Ann Marie "
               . "Smith' WHERE id = $ids[0]", may_fail => 1),
     qr/never changes/, 'an erased name is never written back ...');
like($sb->psql("UPDATE mt5credit.mt5_credit SET payer_name_erased_at = NULL"
               . " WHERE id = $ids[0]", may_fail => 1),
     qr/never changes/, '... nor its erasure undone');
like($sb->psql("UPDATE mt5credit.mt5_credit SET payer_name = 'John Smith' "
               . "WHERE id = $ids[1]", may_fail => 1),
     qr/never changes/, 'a kept name is not changed ...');
like($sb->psql("UPDATE mt5credit.mt5_credit SET payer_name = NULL "
               . "WHERE id = $ids[1]", may_fail => 1),
     qr/never changes|payer_name_erased/,
     '... nor removed but by an erasure that says when');
like($sb->psql("UPDATE mt5credit.mt5_credit SET payer_name = NULL, "
               . "payer_name_erased_at = now(), instrument = 'card_x' "
               . "WHERE id = $ids[1]", may_fail => 1),
     qr/never changes/, '... nor with the card changed beside it');
is($malformed->($bad[0]), '0 true 1', 'the old malformed delivery: emptied, '
   . 'found by its digest');
is($malformed->($bad[1]), length($bad[1]) . ' false 1',
   '... the new one: kept as it came');
is($st->webhook($bad[0])->{status}, 400, 'the old bytes delivered again: 400');
is($malformed->($bad[0]), '0 true 2', '... counted under their digest, not '
   . 'stored again');
like($sb->psql("UPDATE mt5credit.webhook_malformed SET raw_body = "
               . "convert_to('$bad[0]', 'UTF8') WHERE body_redacted_at IS NOT "
               . "NULL", may_fail => 1),
     qr/kept as it came/, '... and its body is never written back');
my $redacted = sub {
    $sb->sql1("SELECT length(raw_body) || ' ' || (body_redacted_at IS NOT NULL)"
              . " FROM mt5credit.webhook_event WHERE id = $_[0]");
};
is($redacted->($ev{$ids[0]}), '0 true', 'an old event of a done credit: emptied');
is($redacted->($ev{$ids[1]}) =~ /^[1-9]\d* false$/ ? 'kept' : 'gone', 'kept',
   '... one whose credit has an open case: kept');
is($redacted->($ev{$ids[3]}) =~ / false$/ ? 'kept' : 'gone', 'kept',
   '... one 100 days old: kept');
is($redacted->($ev{$pending}) =~ / false$/ ? 'kept' : 'gone', 'kept',
   '... one whose credit is not finished: kept');
is($digests->(), $before, 'every digest kept');
is($sb->sql1("SELECT disposition || ' ' || credit_id FROM "
             . "mt5credit.webhook_event WHERE id = $ev{$ids[0]}"),
   "credit_created $ids[0]", '... and what ingest() decided');

like($sb->psql("UPDATE mt5credit.webhook_event SET raw_body = 'x' "
               . "WHERE id = $ev{$ids[0]}", may_fail => 1),
     qr/evidence: its content is immutable/,
     'an emptied body is never written again');
like($sb->psql("UPDATE mt5credit.webhook_event SET event_type = 'x' "
               . "WHERE id = $ev{$ids[3]}", may_fail => 1),
     qr/evidence: its content is immutable/, '... nor anything else changed');

($rc, $out) = Mt5Credit::Worker::run($sb, 'retention', '--database',
                                     "$db user=keeper", '--days', '400');
like($out, qr/retention: 0 webhook bodies.* 0 malformed.* 0 payers' names/,
     'a second run: nothing more');

# reports
my $rep = $sb->dir . '/reports';
mkdir $rep;
for my $f ('recon-stripe-2024-01-01-USD-run7.csv',
           'recon-stripe-2024-01-01-USD-run7.html',
           'recon-stripe-2026-12-01-USD-run9.csv', 'notes.txt',
           'recon-stripe-x.csv') {
    $sb->write_file("$rep/$f", "x\n");
}
my $old = time - 500 * 86400;
utime $old, $old, map { "$rep/$_" } 'recon-stripe-2024-01-01-USD-run7.csv',
    'recon-stripe-2024-01-01-USD-run7.html', 'notes.txt', 'recon-stripe-x.csv';
($rc, $out) = Mt5Credit::Worker::run($sb, 'retention', '--database',
    "$db user=keeper", '--reports', $rep, '--report-days', '400');
is($rc, 0, 'with --reports') or diag $out;
like($out, qr/2 reports older than 400 days removed/, '... two removed');
is(join(' ', sort map { s{.*/}{}r } glob("$rep/*")),
   'notes.txt recon-stripe-2026-12-01-USD-run9.csv recon-stripe-x.csv',
   '... the old reports only: a new one and other files stay');

done_testing;
