#!/usr/bin/perl
#
# Insiders hold credentials: each role may do only what its program
# needs, and the proof is read from the catalogue, not from the
# migrations' intent.  This makes impossible:
#   - a function grant (to a program's role, to PUBLIC, through a role
#     membership) that nobody reviewed: every executable function of every
#     group role is compared with the committed t/roles/executable-functions.txt
#   - a program's role being able to take a person's part in moving money:
#     no role but the desk's may prepare, approve or decide anything
#   - a role that logs in by itself holding more than its group gives
#   - the console's roles holding any right of their own

use strict;
use warnings;

use Test::More;

use Mt5Credit::Sandbox;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $LIST = "$ROOT/t/roles/executable-functions.txt";

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

my @granted = map { $_->[0] } @{ $sb->psql(<<'SQL') };
SET search_path = mt5credit;
SELECT r.rolname || ' ' || p.oid::regprocedure::text
FROM pg_roles r
CROSS JOIN pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit' AND r.rolname LIKE 'mt5credit\_%'
  AND r.rolname <> 'mt5credit_owner'
  AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
ORDER BY 1;
SQL

if ($ENV{MT5CREDIT_WRITE_ALLOWLIST}) {
    open my $in, '<', $LIST or die "$LIST: $!";
    my @head = grep { /^#/ } <$in>;
    close $in;
    open my $out, '>', $LIST or die "$LIST: $!";
    print $out @head, map { "$_\n" } @granted;
    close $out;
    diag("wrote $LIST: " . @granted . ' grants');
}

open my $fh, '<', $LIST or die "$LIST: $!";
my @allowed = grep { /\S/ && !/^#/ } map { chomp; $_ } <$fh>;
close $fh;

my %allowed = map { $_ => 1 } @allowed;
my %granted = map { $_ => 1 } @granted;

cmp_ok(scalar @granted, '>', 40, 'the catalogue was read (' . @granted
       . ' grants)');
is(join("\n", grep { !$allowed{$_} } @granted), '',
   'no role may execute a function the allow-list does not name');
is(join("\n", grep { !$granted{$_} } @allowed), '',
   'and every grant the allow-list names is there (it is current)');

# the console's roles (052) hold nothing but the console's one door
# (063): a console login acts only as a person, whose role console_call()
# sets (t/67, t/75)
is(join(' ', grep { /^mt5credit_person / } @granted), '',
   'mt5credit_person may execute no function');
is(join(' ', map { /^mt5credit_console (\w+)\(/ } grep { /^mt5credit_console / }
        @granted), 'console_act_admit console_call console_person_of',
   'mt5credit_console may execute console_call() and its two helpers, '
   . 'nothing else');

# the decisions that move money belong to people
my @decide = qw(case_decide case_propose case_propose_settle_done
                withdrawal_prepare withdrawal_approve
                withdrawal_reject case_resolve);
for my $g (@granted) {
    my ($role, $fn) = $g =~ /^(\S+) ([a-z_]+)\(/ or next;
    next unless grep { $_ eq $fn } @decide;
    is($role, 'mt5credit_operator', "$fn: only the desk's role may run it");
}

# the login roles the tests use hold exactly their group's grants
for my $login ([ 'worker', 'mt5credit_worker' ], [ 'edge', 'mt5credit_ingest' ])
{
    my ($user, $group) = @$login;
    my $extra = $sb->sql1(<<"SQL");
SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit'
  AND has_function_privilege('$user', p.oid, 'EXECUTE')
  AND NOT has_function_privilege('$group', p.oid, 'EXECUTE')
SQL
    is($extra, 0, "the login role $user may run nothing $group may not");
}

done_testing();
