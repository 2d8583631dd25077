#!/usr/bin/perl
#
# A second person needs a second factor (sql/065, issue 29 item 5).  The
# console's login is a member of every person's role; whoever holds its
# credentials alone could SET ROLE to each in turn.  Here they hold only
# that login ("web", NOINHERIT, as docs/console.md sets it up), and act
# the way the console does (console_call(), sql/063) and the way an
# attacker would (SET LOCAL ROLE, then the desk's functions).  Impossible:
#   - preparing and approving a withdrawal, proposing and approving a
#     re-queue, proposing a settle as done, as anyone, without that
#     person's code: directly (MC140), through the console without a
#     code, with a wrong one, with a code verified for another action or
#     in another transaction, or with a code already used
#   - forging the step-up: its table cannot be written, the secrets not
#     read (from the catalogue: no role but the owner; and by trying)
#   - guessing: a wrong code spends one of five tries, a rollback does not
#     give it back, and with none left even the right code is refused
#     until the time said; every refusal on the console's path is kept
#   - enrolling (and so learning) anyone's secret through the console's
#     login, even as a person admin's role; a person who is no admin
#     enrolling someone else
#   - a person with no second factor moving money through the console
#   - `mt5credit persons enrol` printing a URI or a QR code other than the
#     one the database made (the QR code is read back with zbarimg, and
#     its code moves money), leaving the PNG readable by others, or
#     overwriting a file
#   - the CLI changing: a person's own login needs no code
# and with the right codes, each decision is made and recorded as its
# person's.  TOTP codes are computed here (Digest::SHA) from the URI
# enrolment printed, and checked against RFC 6238's vectors in the
# database.

use strict;
use warnings;

use File::Temp qw(tempdir);
use JSON::PP;
use Test::More;
use Time::HiRes qw(time sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Totp;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new(redis => 0);
my $sb = $st->sb;
my $json = JSON::PP->new->canonical;
$st->account(login => 70701);

$sb->psql(<<'SQL');
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE ben  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE dan  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE eve  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE fay  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
-- a person admin the console may act for: its login can SET ROLE to her
CREATE ROLE ada  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person,
                                 mt5credit_person_admin;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann, ben, dan, eve, fay, ada TO web;
SELECT mt5credit.person_identity_map(p, p)
FROM unnest(ARRAY['ann', 'ben', 'dan', 'eve', 'fay', 'ada']) p;
-- at logins of their own: a person admin, and a person at the CLI
CREATE ROLE pat  LOGIN IN ROLE mt5credit_person_admin;
CREATE ROLE carl LOGIN IN ROLE mt5credit_operator, mt5credit_person;
SQL

my $app = Mt5Credit::Totp->new(sb => $sb);

# the console's way: one transaction, console_call() as the console's
# group role, the action as one JSON value
sub console {
    my ($who, $action, %opt) = @_;
    my $out = $sb->psql("BEGIN;\nSET LOCAL ROLE mt5credit_console;\n"
        . "SELECT mt5credit.console_call('$who', 'act', \$j\$"
        . $json->encode($action) . "\$j\$, NULL, NULL, NULL, NULL);\n"
        . ($opt{rollback} ? 'ROLLBACK' : 'COMMIT') . ";\n",
        user => 'web', may_fail => 1, raw => 1);
    chomp $out;
    return $out =~ /^\{/ ? $json->decode($out) : { raw => $out };
}

# the attacker's way: set the person's role, call what they like
sub as_person {
    my ($person, $sql) = @_;
    my $out = $sb->psql("BEGIN;\nSET LOCAL ROLE \"$person\";\n$sql;\nCOMMIT;",
                        user => 'web', may_fail => 1, raw => 1);
    chomp $out;
    return $out;
}

sub refusals {
    my ($person) = @_;
    return $sb->sql1("SELECT count(*) FROM mt5credit.person_step_up_refusal "
                     . "WHERE person = '$person'");
}

# a failed credit with its case; a done one to withdraw from; an unknown
# one with its case, to settle
my $failed = $st->pay(login => 70701, amount => 1800);
my $case = $st->failed_with_case($failed, 'step-up-1');
my $done = $st->pay(login => 70701, amount => 5000);
my $unknown = $st->pay(login => 70701, amount => 900);
$sb->psql(<<"SQL");
SET session_replication_role = replica;
UPDATE mt5credit.mt5_credit SET status = 'done', mt5_deal_ticket = 88001,
    attempts = 1
WHERE id = $done;
UPDATE mt5credit.mt5_credit SET status = 'unknown', attempts = 1
WHERE id = $unknown;
SET session_replication_role = origin;
SELECT mt5credit.open_case('mt5_unknown', 'high', 'step-up-2', '{}',
                           $unknown);
SQL
my $case2 = $sb->sql1("SELECT id FROM mt5credit.case "
                      . "WHERE dedupe_key = 'step-up-2'");
my $wd_seq = 0;
sub withdrawal {
    return $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'step-up-wd-" . ++$wd_seq . "', 'stripe', 'live1', "
        . "70701, 500, 'USD', 'ba_step_up')", user => 'portal');
}
my $wd = withdrawal();
my $wd2 = withdrawal();

sub wd_status {
    return $sb->sql1("SELECT status || ' ' || coalesce(prepared_by, '-') "
                     . "|| ' ' || coalesce(approved_by, '-') FROM "
                     . "mt5credit.withdrawal WHERE reference = '$_[0]'");
}

# --- TOTP itself -------------------------------------------------------------

is($sb->sql1("SELECT string_agg(mt5credit.totp_code('12345678901234567890'"
             . "::bytea, s), ' ') FROM unnest(ARRAY[1, 37037036, 41152263,"
             . " 66666666]) s"),
   '287082 081804 005924 279037',
   'totp_code(): RFC 6238\'s SHA-1 vectors (59 s, 1111111109 s, '
   . '1234567890 s, 2000000000 s), as six digits');
is(Mt5Credit::Totp::code_at('12345678901234567890', 1), '287082',
   '... and this test\'s own computation agrees');

# --- the secrets: nobody reads them ------------------------------------------

# (PostgreSQL's pg_read_all_data and pg_write_all_data aside: any role
# granted one would be named here)
is($sb->sql1(<<'SQL'), 'none', 'from the catalogue: no role but the owner may read person_totp or any column of it');
SELECT coalesce(string_agg(r.rolname, ' '), 'none') FROM pg_roles r
WHERE NOT r.rolsuper AND r.rolname <> 'mt5credit_owner'
  AND r.rolname NOT IN ('pg_read_all_data', 'pg_write_all_data')
  AND (has_table_privilege(r.oid, 'mt5credit.person_totp',
                           'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')
       OR has_any_column_privilege(r.oid, 'mt5credit.person_totp',
                                   'SELECT, INSERT, UPDATE'))
SQL
is($sb->sql1(<<'SQL'), 'none', '... nor write person_step_up (the proof of a code), nor read or write its refusals, nor touch a tries sequence');
SELECT coalesce(string_agg(DISTINCT r.rolname, ' '), 'none') FROM pg_roles r
CROSS JOIN pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT r.rolsuper AND r.rolname <> 'mt5credit_owner'
  AND r.rolname NOT IN ('pg_read_all_data', 'pg_write_all_data')
  AND n.nspname = 'mt5credit'
  AND (c.relname IN ('person_step_up', 'person_step_up_refusal',
                     'person_totp_history')
       OR c.relname LIKE 'person\_totp\_tries\_%')
  AND (has_table_privilege(r.oid, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')
       OR (c.relkind = 'S' AND has_sequence_privilege(r.oid, c.oid,
                                                     'USAGE, UPDATE')))
SQL
like(as_person('ann', 'SELECT secret FROM mt5credit.person_totp'),
     qr/permission denied/, 'as ann (through the console\'s login): '
     . 'permission denied on person_totp');

# --- enrolment: at a login of one's own -------------------------------------

like($sb->psql("SELECT mt5credit.person_totp_enrol('ann')", user => 'web',
               may_fail => 1), qr/permission denied/,
     'the console\'s login cannot enrol anyone');
like(as_person('ada', "SELECT mt5credit.person_totp_enrol('ann')"),
     qr/never through a set role/,
     '... nor as a person admin whose role it may set (ada)');
like(as_person('ann', "SELECT mt5credit.person_totp_enrol('ann')"),
     qr/never through a set role/, '... nor as ann herself');
like($sb->psql("SELECT mt5credit.person_totp_enrol('ann')", user => 'carl',
               may_fail => 1), qr/carl may not enrol ann/,
     'carl, a person at his own login, cannot enrol ann');
like($sb->psql("SELECT mt5credit.person_totp_enrol('web')", user => 'pat',
               may_fail => 1), qr/"web" is no person/,
     'a console login is no person to enrol');

my %uri;
for my $p (qw(ann ben dan ada)) {
    $uri{$p} = $sb->sql1("SELECT mt5credit.person_totp_enrol('$p')",
                         user => 'pat');
    $app->enrol($p, $uri{$p});
}
like($uri{ann}, qr{^otpauth://totp/mt5-credit%3Aann%40mt5credit\?secret=[A-Z2-7]{32}&issuer=mt5-credit&algorithm=SHA1&digits=6&period=30$},
     'pat, a person admin, enrols ann: the otpauth URI, 160 bits of secret');
isnt($app->enrol('ben', $uri{ben}), $app->enrol('ann', $uri{ann}),
     '... each person their own secret');
like($sb->psql("SELECT mt5credit.person_totp_enrol('ann')", user => 'pat',
               may_fail => 1), qr/has a second factor already/,
     '... enrolled once: again is a reset');
$uri{carl} = $sb->sql1("SELECT mt5credit.person_totp_enrol('carl')",
                       user => 'carl');
like($uri{carl}, qr/^otpauth:/, 'carl enrols himself at his own login');
is($sb->sql1("SELECT string_agg(person_name || ':' || action || ':' || "
             . "actor, ' ' ORDER BY id) FROM mt5credit.person_totp_history"),
   'ann:enrol:pat ben:enrol:pat dan:enrol:pat ada:enrol:pat '
   . 'carl:enrol:carl', '... every enrolment kept with who did it');
is($sb->sql1("SELECT string_agg(person, ' ') FROM "
             . "mt5credit.person_totp_list()", user => 'pat'),
   'ada ann ben carl dan', 'the person admin lists who has a second factor');

is($sb->sql1("BEGIN; SET LOCAL ROLE mt5credit_console; SELECT "
             . "mt5credit.console_call('ann', 'whoami', 't', NULL, NULL, "
             . "NULL, NULL)::jsonb->>'second_factor'; COMMIT;",
             user => 'web'), 'true', 'whoami: ann has a second factor');
is($sb->sql1("BEGIN; SET LOCAL ROLE mt5credit_console; SELECT "
             . "mt5credit.console_call('eve', 'whoami', 't', NULL, NULL, "
             . "NULL, NULL)::jsonb->>'second_factor'; COMMIT;",
             user => 'web'), 'false', '... eve has none');

# --- the desk's functions, as the attacker calls them --------------------------

for my $try (
    [ ann => "SELECT mt5credit.withdrawal_prepare('$wd', 'x')",
      'prepare a withdrawal' ],
    [ ann => "SELECT mt5credit.case_propose($case, 'requeue_credit', NULL, "
             . "NULL, 'x', '[]')", 'propose a re-queue' ],
    [ ann => "SELECT mt5credit.case_propose_settle_done($case2, NULL, "
             . "4242, 'x', '[\"seen\"]')", 'propose a settle as done' ],
    [ ann => "SELECT mt5credit.case_propose($case, 'correcting_credit', "
             . "$done, '10.00', 'x', '[]')", 'propose a correction' ],
) {
    like(as_person($try->[0], $try->[1]), qr/second factor/,
         "with the console's login alone, as $try->[0]: cannot $try->[2]");
}
like(as_person('ann', "INSERT INTO mt5credit.person_step_up VALUES ('ann', "
               . "1, 'withdrawal_prepare', repeat('0', 64), "
               . "pg_current_xact_id())"), qr/permission denied/,
     '... nor write the step-up it would need');
is(wd_status($wd), 'requested - -', '... nothing prepared');

# --- through the console: no code, wrong code, another action's, a used one ----

my $r = console('ann', { action => 'withdrawal_prepare', withdrawal => $wd,
                         note => 'x' });
is($r->{error}, 'second_factor', 'through the console without a code: '
   . 'refused as second_factor') or diag explain $r;
is($r->{reason}, 'no_code', '... no_code');
like($sb->psql("BEGIN; SET LOCAL ROLE mt5credit_console; SELECT "
               . "mt5credit.console_call('ann', 'act', '{\"action\":"
               . "\"withdrawal_prepare\",\"withdrawal\":\"$wd\"}', NULL, "
               . "NULL, NULL, NULL); COMMIT;", user => 'web', raw => 1),
     qr/^\{"error": "second_factor", /,
     '... the answer\'s text begins {"error": "second_factor" (the edge '
     . 'answers it 403)');

my ($right, $step) = $app->code('ann');
my $wrong = sprintf '%06d', ($right + 1) % 1_000_000;
$r = console('ann', { action => 'withdrawal_prepare', withdrawal => $wd,
                      code => $wrong });
is("$r->{reason} $r->{tries_left}", 'wrong_code 4',
   'a wrong code: wrong_code, 4 tries left');
is(refusals('ann'), 3, '... every refusal on the console\'s path kept');

$r = console('eve', { action => 'withdrawal_prepare', withdrawal => $wd,
                      code => '123456' });
is($r->{reason}, 'not_enrolled', 'eve, never enrolled: not_enrolled');
like($r->{detail}, qr/mt5credit persons enrol eve/, '... saying how');

like(as_person('ann', "SELECT mt5credit.step_up_verify('$right', "
               . "'withdrawal_prepare', '$wd2'); SELECT "
               . "mt5credit.withdrawal_prepare('$wd', 'x')"),
     qr/second factor/, 'ann\'s right code verified for another '
     . 'withdrawal does not prepare this one');
like(as_person('ann', "SELECT mt5credit.step_up_verify('$right', "
               . "'withdrawal_approve', '$wd', NULL); SELECT "
               . "mt5credit.withdrawal_prepare('$wd', 'x')"),
     qr/second factor/, '... nor does one verified for another action');
like($sb->psql("BEGIN; SET LOCAL ROLE ann; SELECT mt5credit.step_up_verify("
               . "'$right', 'withdrawal_prepare', '$wd'); COMMIT; BEGIN; "
               . "SET LOCAL ROLE ann; SELECT mt5credit.withdrawal_prepare("
               . "'$wd', 'x'); COMMIT;", user => 'web', may_fail => 1),
     qr/second factor/, '... nor one verified in an earlier transaction');
is(wd_status($wd), 'requested - -', '... nothing prepared');
$r = console('ann', { action => 'withdrawal_prepare', withdrawal => $wd,
                      code => $right });
is($r->{reason}, 'code_used',
   'that code, committed once (even unspent), is used: code_used');

# --- with the right codes: two people, two codes --------------------------------

$r = console('ann', { action => 'withdrawal_prepare', withdrawal => $wd,
                      note => 'checked', code => scalar $app->code('ann') });
like($r->{digest} // '', qr/^[0-9a-f]{32}$/,
     'ann prepares the withdrawal with a fresh code') or diag explain $r;
my $digest = $r->{digest};
$r = console('ben', { action => 'withdrawal_approve', withdrawal => $wd,
                      digest => $digest, note => 'ok' });
is($r->{reason}, 'no_code', 'ben\'s approval without a code: refused');
is(wd_status($wd), 'prepared ann -', '... still only prepared');
my ($bcode) = $app->code('ben');
$r = console('ben', { action => 'withdrawal_approve', withdrawal => $wd,
                      digest => $digest, note => 'ok', code => $bcode });
is($r->{action}, 'withdrawal_approve', 'ben approves with his code')
    or diag explain $r;
is(wd_status($wd), 'approved ann ben', '... approved, by ann and ben');
$r = console('ben', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => $bcode });
is($r->{reason}, 'code_used', '... and his code, replayed for another '
   . 'action, is refused');
is($sb->sql1("SELECT count(*) FROM mt5credit.person_step_up WHERE "
             . "used_at IS NOT NULL AND person IN ('ann', 'ben')"), 2,
   'each decision spent its own step-up');

# a re-queue: proposed by ann, approved by ben
$r = console('ann', { action => 'propose', case => $case + 0,
                      proposal_action => 'requeue_credit', note => 'x' });
is($r->{reason}, 'no_code', 'a proposal without a code: refused');
$r = console('ann', { action => 'propose', case => $case + 0,
                      proposal_action => 'requeue_credit', note => 'enabled',
                      code => scalar $app->code('ann') });
my $proposal = $r->{id};
ok($proposal, 'ann proposes the re-queue with her code') or diag explain $r;
$r = console('ben', { action => 'approve', proposal => $proposal,
                      code => $wrong });
is($r->{reason}, 'wrong_code', 'ben approves with a wrong code: refused');
is($st->status_of($failed), 'failed', '... nothing moved');
$r = console('ben', { action => 'approve', proposal => $proposal,
                      note => 'checked', code => scalar $app->code('ben') });
is($r->{action}, 'approve', 'ben approves with his code') or diag explain $r;
is($st->status_of($failed), 'pending', '... the credit is re-queued');
is($sb->sql1("SELECT proposed_by || ' ' || decided_by FROM "
             . "mt5credit.money_proposal WHERE id = $proposal"), 'ann ben',
   '... recorded as ann\'s and ben\'s');

# a settle as done: proposed by ann, approved by ben (ann's code is asked
# for only after the desk's own checks pass)
$r = console('ann', { action => 'propose_settle_done', case => $case2 + 0,
                      ticket => 4242, evidence => [ 'seen in MT5' ],
                      note => 'x' });
is($r->{reason}, 'no_code', 'a settle as done without a code: refused');
$r = console('ann', { action => 'propose_settle_done', case => $case2 + 0,
                      ticket => 4242, evidence => [ 'seen in MT5' ],
                      note => 'deal 4242', code => scalar $app->code('ann') });
my $settle = $r->{id};
ok($settle, 'ann proposes it with her code') or diag explain $r;
$r = console('ann', { action => 'approve', proposal => $settle,
                      code => scalar $app->code('ann') });
like($r->{raw}, qr/two-person rule/, 'ann cannot approve her own, code or not');
$r = console('ben', { action => 'approve', proposal => $settle,
                      code => scalar $app->code('ben') });
is($r->{action}, 'approve', 'ben approves it with his code')
    or diag explain $r;
is($sb->sql1("SELECT status FROM mt5credit.money_proposal WHERE id = "
             . "$settle"), 'approved', '... approved');

# --- guessing --------------------------------------------------------------------

my $good = scalar $app->code('dan');
my $bad = sprintf '%06d', ($good + 500_000) % 1_000_000;
$r = console('dan', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => $bad }, rollback => 1);
is($r->{tries_left}, 4, 'dan\'s wrong code in a transaction rolled back...');
is(refusals('dan'), 0, '... leaves no refusal row');
$r = console('dan', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => $bad });
is($r->{tries_left}, 3, '... but the try stays spent: 3 left');
for my $left (2, 1) {
    $r = console('dan', { action => 'withdrawal_prepare', withdrawal => $wd2,
                          code => $bad });
}
is("$r->{reason} $r->{tries_left}", 'wrong_code 1', 'wrong again: 1 left');
$r = console('dan', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => $bad });
is($r->{tries_left}, 0, 'the fifth wrong code: none left');
like($r->{detail}, qr/locked until/, '... locked, until a time said');
$r = console('dan', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => $good });
is($r->{reason}, 'locked', 'then even dan\'s right code is refused: locked');
my $until = $sb->sql1("SELECT extract(epoch FROM '$r->{locked_until}'"
                      . "::timestamptz - now())::integer");
ok($until > 14 * 60 && $until <= 15 * 60,
   "... for 15 minutes, when a try comes back ($until s)");
is(wd_status($wd2), 'requested - -', '... nothing prepared');
is(refusals('dan'), 5, '... the four committed wrong codes and the lock '
   . 'kept as refusals');
like(as_person('dan', "SELECT mt5credit.step_up_verify('$good', "
               . "'withdrawal_prepare', '$wd2')"), qr/"reason": "locked"/,
     '... and asked directly, the same');
is($sb->sql1("SELECT tries_left FROM mt5credit.person_totp_list() "
             . "WHERE person = 'dan'", user => 'pat'), 0,
   'the person admin sees dan with no try left');
is(console('ann', { action => 'withdrawal_prepare', withdrawal => $wd2,
                    code => $bad })->{tries_left}, 2,
   'other persons\' tries are their own (ann, after her wrong and used '
   . 'codes: 2 left)');

# a reset: a new secret, the old codes dead
my $old = $app->code('ada');
my $new_uri = $sb->sql1("SELECT mt5credit.person_totp_reset('ada')",
                        user => 'pat');
isnt($new_uri, $uri{ada}, 'pat resets ada: a new URI');
$r = console('ada', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => $old });
is($r->{reason}, 'wrong_code', '... the old app\'s code is wrong now');
like($sb->psql("SELECT mt5credit.person_totp_reset('eve')", user => 'pat',
               may_fail => 1), qr/no second factor to reset/,
     'resetting someone never enrolled: refused');

# --- mt5credit persons -----------------------------------------------------------

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
my $tmp = tempdir('mt5credit-qr-XXXXXX', TMPDIR => 1, CLEANUP => 1);
sub persons {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'persons', '--database',
                                  "$db user=$who", @args);
}

my ($rc, $out) = persons('carl', 'enrol', 'fay');
is($rc, 1, 'mt5credit persons enrol fay, as carl: exit 1');
like($out, qr/refused: carl may not enrol fay/, '... the database\'s refusal');
($rc, $out) = persons('pat', 'enrol', 'fay', '--qr', "$tmp/fay.png");
is($rc, 0, 'as pat, a person admin: exit 0') or diag $out;
my ($fay_uri) = $out =~ m{^(otpauth://totp/\S+)$}m;
like($fay_uri // '', qr/mt5-credit%3Afay%40mt5credit\?secret=[A-Z2-7]{32}&/,
     '... the otpauth URI printed once');
like($out, qr/give it to them alone, keep no copy \(delete the PNG/,
     '... with a word on keeping it');
unlike($out, qr/\e\[/, '... no QR code drawn where the output is no '
       . 'terminal');
is(sprintf('%04o', (stat "$tmp/fay.png")[2] & 07777), '0600',
   '--qr: the PNG is readable by its writer only');
SKIP: {
    skip 'no zbarimg (zbar-tools)', 1 unless -x '/usr/bin/zbarimg';
    my $read = `zbarimg --quiet --raw $tmp/fay.png 2>/dev/null`;
    chomp $read;
    is($read, $fay_uri, '... and its QR code reads back as that URI');
}
$app->enrol('fay', $fay_uri // '');
$r = console('fay', { action => 'withdrawal_prepare', withdrawal => $wd2,
                      code => scalar $app->code('fay') });
like($r->{digest} // '', qr/^[0-9a-f]{32}$/,
     '... whose codes prepare a withdrawal as fay') or diag explain $r;
($rc, $out) = persons('pat', 'reset', 'fay', '--qr', "$tmp/fay.png");
is($rc, 1, 'a reset whose --qr file exists: exit 1');
like($out, qr/fay\.png: File exists \(a QR code is written to a new file/,
     '... the file is not overwritten');
my ($reset_uri) = $out =~ m{^(otpauth://totp/\S+)$}m;
isnt($reset_uri // $fay_uri, $fay_uri, '... the new secret is still shown, '
     . 'once (it is made)');
($rc, $out) = persons('pat', 'list');
like($out, qr/^fay\s+pat\s+\S+Z\s+5$/m, 'persons list: fay, by pat, 5 tries');
like($out, qr/^dan\s+pat\s+\S+Z\s+0, locked until \S+Z$/m,
     '... dan locked, until when');
is((persons('pat', 'enrol'))[0], 2, 'enrol whom? a usage error (2)');

# --- the CLI is unchanged --------------------------------------------------------

my $wd3 = withdrawal();
my $d3 = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$wd3', 'cli')",
                   user => 'ops_alice');
like($d3, qr/^[0-9a-f]{32}$/, 'at her own login, ops_alice prepares '
     . 'without a code');
$sb->psql("SELECT mt5credit.withdrawal_approve('$wd3', '$d3', 'cli')",
          user => 'ops_bob');
is(wd_status($wd3), 'approved ops_alice ops_bob',
   '... and ops_bob approves: the CLI\'s two people, as before');

done_testing;
