#!/usr/bin/perl
#
# The console's way into the database (sql/052, 053): one login, NOINHERIT,
# a member of each person's role, acting for a person by SET LOCAL ROLE
# for one transaction; the actor is person().  Impossible:
#   - the console's login doing anything by itself (it has no right of its
#     own: from the catalogue, and by trying)
#   - an action recorded as the console instead of the person, or one
#     person approving their own proposal through the console
#   - the console acting as a group (SET ROLE mt5credit_operator, which it
#     may set through its persons): refused, never an anonymous actor that
#     could approve what a person proposed
#   - a reader acting
#   - the CLI's actors changing: a person's own login is still the actor
#   - a money decision through a set role without the person's second
#     factor (sql/065; t/70 proves the rest of it)

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Totp;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 70671);

$sb->psql(<<'SQL');
CREATE ROLE ann  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE ben  NOLOGIN IN ROLE mt5credit_operator, mt5credit_person;
CREATE ROLE rita NOLOGIN IN ROLE mt5credit_reader, mt5credit_person;
-- an operator group member that is no person: the console may not be it
CREATE ROLE bot  NOLOGIN IN ROLE mt5credit_operator;
CREATE ROLE web  LOGIN NOINHERIT IN ROLE mt5credit_console;
GRANT ann, ben, rita, bot TO web;
SQL

# ann's and ben's authenticator apps (sql/065)
my $app = Mt5Credit::Totp->new;
$app->enrol($_, $sb->sql1("SELECT mt5credit.person_totp_enrol('$_')"))
    for qw(ann ben);

# the person's code, verified for one action in the transaction (what
# console_act() does before it calls the desk's function)
sub step_up {
    my ($person, $action, @args) = @_;
    return "SELECT mt5credit.step_up_verify('" . $app->code($person)
         . "', '$action', " . join(', ', map { defined $_ ? "'$_'" : 'NULL' }
                                    @args) . ");
";
}

# what the console does per request: one transaction as one person
sub as_person {
    my ($person, $sql) = @_;
    return $sb->psql("BEGIN;\nSET LOCAL ROLE \"$person\";\n$sql;\nCOMMIT;",
                     user => 'web', may_fail => 1, raw => 1);
}

# a failed credit with its case, as the worker leaves it
my $credit = $st->pay(login => 70671, amount => 1800);
my $case = $st->failed_with_case($credit, 'console-test-1');

# --- the console's login by itself ----------------------------------------

is($sb->sql1(<<'SQL'), 0, 'from the catalogue: the console login may execute no function of ours');
SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit' AND has_function_privilege('web', p.oid, 'EXECUTE')
SQL
is($sb->sql1(<<'SQL'), 0, '... nor read or write a table');
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'mt5credit' AND c.relkind IN ('r', 'v', 'p')
  AND has_table_privilege('web', c.oid, 'SELECT, INSERT, UPDATE, DELETE')
SQL
like($sb->psql("SELECT * FROM mt5credit.case_list(NULL, NULL, NULL, 10)",
               user => 'web', may_fail => 1, raw => 1),
     qr/permission denied/, '... and trying: permission denied');

# --- as a person ----------------------------------------------------------

like(as_person('rita', "SELECT count(*) FROM mt5credit.case_list(NULL, "
               . "NULL, NULL, 10)"), qr/^1$/m,
     'as rita (a reader): the case list');
like(as_person('rita', "SELECT mt5credit.case_assign($case, 'rita', 'x')"),
     qr/permission denied/, '... but a reader cannot act');

my $propose = "SELECT mt5credit.case_propose($case, 'requeue_credit', NULL, "
            . "NULL, 'enabled again', '[\"ticket OPS-7\"]')";
like(as_person('ann', $propose), qr/second factor/,
     'as ann without her second factor: no proposal');
my $out = as_person('ann', step_up('ann', 'propose', $case, 'requeue_credit',
                                   undef, undef) . $propose);
my ($proposal) = $out =~ /^(\d+)$/m;
ok($proposal, 'as ann: a proposal to re-queue the credit') or diag $out;
is($sb->sql1("SELECT proposed_by FROM mt5credit.money_proposal WHERE id = "
             . ($proposal // 0)), 'ann',
   '... recorded as ann, not as the console\'s login');

like(as_person('ann', "SELECT mt5credit.case_decide($proposal, 'approve', "
               . "'mine')"), qr/two-person rule/,
     'ann cannot approve her own through the console');
like(as_person('bot', "SELECT mt5credit.case_decide($proposal, 'approve', "
               . "'a group')"), qr/acting as "bot": .* only if it is a person/,
     'an operator role that is no person cannot act through the console');
like(as_person('mt5credit_operator', "SELECT mt5credit.case_decide("
               . "$proposal, 'approve', 'the group')"),
     qr/acting as "mt5credit_operator"/,
     '... nor the operators\' group, which the console could SET ROLE to');
is($st->status_of($credit), 'failed', '... nothing moved');

$out = as_person('ben', step_up('ben', 'approve', $proposal)
                 . "SELECT mt5credit.case_decide($proposal, 'approve', "
                 . "'checked')");
unlike($out, qr/ERROR/, 'as ben: approved') or diag $out;
is($sb->sql1("SELECT decided_by FROM mt5credit.money_proposal WHERE id = "
             . "$proposal"), 'ben', '... recorded as ben');
is($st->status_of($credit), 'pending', '... and the credit is re-queued');
is($sb->sql1("SELECT actor FROM mt5credit.case_action WHERE case_id = $case "
             . "ORDER BY id DESC LIMIT 1"), 'ben',
   '... the case\'s record names ben');

# the CLI's way: a person's own login, no SET ROLE
$sb->psql("CREATE ROLE carl LOGIN IN ROLE mt5credit_operator");
like($sb->psql("SELECT mt5credit.case_assign($case, 'carl', 'over to me')",
               user => 'carl', raw => 1), qr/^\d*$/m,
     'at the CLI, carl assigns the case to himself');
is($sb->sql1("SELECT actor FROM mt5credit.case_action WHERE case_id = $case "
             . "ORDER BY id DESC LIMIT 1"), 'carl',
   '... recorded as carl, his login, as before');

done_testing;
