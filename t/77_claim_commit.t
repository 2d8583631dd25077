#!/usr/bin/perl
#
# A claim counts only when its COMMIT returned on a live connection
# (issue 30, item 2).  Under synchronous replication a claim's RETURNING
# row reaches the worker before its COMMIT is replicated; a primary that
# dies then sends a WARNING, or nothing, after the row.  Here the COMMIT
# fails after the row by a deferred trigger, which gives the worker the
# same bytes: a row, then an error, and nothing committed.  Impossible:
#   - a balance call to MT5 on a claim whose COMMIT failed after its row
#     (on 2645cbf the worker took the row as its claim and made the deal)
#   - the credit left otherwise than pending, at attempt 0
#   - the credit not made, once COMMITs go through again: one deal

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 77001);

# every COMMIT of a claim fails, after claim_credit()'s row was sent
$sb->psql(<<'SQL');
CREATE FUNCTION public.claim_commit_refused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the claim''s COMMIT failed (t/77)';
END
$$;
GRANT EXECUTE ON FUNCTION public.claim_commit_refused() TO PUBLIC;
CREATE CONSTRAINT TRIGGER claim_commit_refused
    AFTER UPDATE ON mt5credit.mt5_credit
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.status = 'claimed')
    EXECUTE FUNCTION public.claim_commit_refused();
SQL

my $id = $st->pay(login => 77001, amount => 1234);
my $ref = $st->credit($id)->{reference};
$st->start_worker('w1');

ok(Mt5Credit::Worker::wait_for(sub {
       () = Mt5Credit::Worker::log_of($sb, 'w1') =~ /not done/g;
   } , 30), 'the worker read a claim\'s row, then its failed COMMIT: "not done"')
    or diag(Mt5Credit::Worker::log_of($sb, 'w1'));
sleep 3;    # rounds enough for a call, were one to be made
is(scalar @{ $st->deals_with($ref) }, 0,
   'no balance call on a claim whose COMMIT failed after its row');
my $c = $st->credit($id);
is("$c->{status} $c->{attempts}", 'pending 0',
   '... the credit still pending, attempt 0: nothing was claimed');

$sb->psql('DROP TRIGGER claim_commit_refused ON mt5credit.mt5_credit');
ok($st->wait_status($id, 'done', 30), 'COMMITs go through again: done');
is(scalar @{ $st->deals_with($ref) }, 1, '... with one deal');
$st->stop_worker('w1');

done_testing;
