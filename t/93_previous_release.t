#!/usr/bin/perl
#
# The previous release's binaries against this tree's schema: a rolling
# upgrade, as docs/operations.md ("Upgrades: expand, then contract")
# orders it.  The release is t/compat/previous-release (a version and a
# commit of this history); its tree comes out of git (git archive), its
# edge module and mt5credit are built with its own Makefile, and the
# database is migrated by this tree's sql/migrate to the newest
# migration.  Then, one step of the upgrade at a time: the old edge and
# the old worker alone; this tree's edge beside the old one, feeding the
# old worker; the old worker killed with a call in flight and this tree's
# worker taking over its claim; old and new edges and workers all at once,
# every event delivered to both edges; the old ones stopped, the new ones
# alone.  This makes impossible:
#   - a migration that breaks the previous release's edge: an old call
#     shape of ingest() (051's five arguments) or of anything it prepares
#     dropped or changed, so that deliveries get 503 or are lost
#   - the same for the old worker: a claim, a settlement, a lookup or a
#     column it reads that a migration removed, renamed or re-typed
#   - a payment credited twice or not at all while old and new binaries
#     run together: one credit per payment whichever edge stored it and
#     however often, one deal per reference in MT5, every credit done
#   - a claim the old worker held when it died, made twice or left
#     hanging by the new worker (one deal, done)
#   - an error in any log that says the schema and a binary disagree
#     (PostgreSQL's, the workers', nginx's)
#   - a contraction too early, in any part of the previous release: its
#     schema, built by its own migrate beside this one, and every
#     function its group roles may call (by signature), every table
#     grant, every column and type attribute must still be here.  On
#     d727c81 049 and 067 had dropped events_list()'s and
#     recon_window()'s 0.12.0 signatures: 0.12.0's `events list` and
#     `reconcile` failed ("does not exist"); sql/072 brings them back,
#     and both are run here
#   - the pointer rotting: the commit must exist in the clone, be an
#     ancestor of HEAD, carry the version named, and its migrations must
#     be this tree's, unchanged (an applied migration is never edited)

use strict;
use warnings;

use File::Temp qw(tempdir);
use POSIX ();
use Test::More;
use Time::HiRes qw(time);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Stack;
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Settlement;
use Mt5Credit::Worker;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
# (safe.directory: the tester does not own the clone)
my @GIT = ('git', '-c', 'safe.directory=*', '-C', $ROOT);

sub git_out {
    my (@args) = @_;
    open my $fh, '-|', @GIT, @args or die "git: $!";
    local $/;
    my $out = <$fh> // '';
    close $fh;
    return ($? >> 8, $out);
}

# --- which release, and its tree -------------------------------------------

my ($in_git) = git_out('rev-parse', '--git-dir');
plan skip_all => "$ROOT is not a git clone: the previous release's tree "
               . "comes from its history (git archive)" if $in_git;

my %prev;
open my $pf, '<', "$ROOT/t/compat/previous-release"
    or die "t/compat/previous-release: $!";
while (<$pf>) {
    next if /^\s*(#|$)/;
    /^(version|commit)\s+(\S+)\s*$/ or die "t/compat/previous-release:$.: $_";
    $prev{$1} = $2;
}
close $pf;
like($prev{commit} // '', qr/^[0-9a-f]{40}$/,
     't/compat/previous-release names a full commit hash');
my $commit = $prev{commit};
my $short = substr($commit, 0, 12);

my ($missing) = git_out('cat-file', '-e', "$commit^{commit}");
if ($missing) {
    fail("commit $short (the previous release) is not in this clone: "
         . "a shallow clone? the test needs the full history");
    done_testing;
    exit;
}
my ($not_ancestor) = git_out('merge-base', '--is-ancestor', $commit, 'HEAD');
is($not_ancestor, 0, "$short is an ancestor of HEAD");
my (undef, $old_version) = git_out('show', "$commit:VERSION");
chomp $old_version;
is($old_version, $prev{version}, "$short is version $prev{version}");

# its own directory, built outside the sandbox's (whose teardown runs
# first); no dot in the name (the module's build refuses ".c" in a path)
my $prev_dir = tempdir('mt5credit-prev-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $tree = "$prev_dir/tree";
mkdir $tree or die "$tree: $!";
system("@GIT archive --format=tar $commit | tar -C $tree -xf -") == 0
    or die "git archive $short failed";

# every migration the old binaries were written against, unchanged
my (@old_sql, @changed);
opendir my $sd, "$tree/sql" or die;
@old_sql = sort grep { /^\d{3}_.*\.sql$/ } readdir $sd;
closedir $sd;
for my $f (@old_sql) {
    push @changed, $f
        if system('cmp', '-s', "$tree/sql/$f", "$ROOT/sql/$f") != 0;
}
is(join(' ', @changed), '',
   'every migration of ' . $prev{version} . ' (' . @old_sql
   . ') is in this tree, unchanged');
my ($old_last) = $old_sql[-1] =~ /^(\d{3})/;

# its own Makefile's targets: the program and the module, nothing else
my $t0 = time;
my $build = system("cd $tree && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "
                   . "make -j2 MT5CREDIT_COMMIT=$short batch module "
                   . "> $prev_dir/build.log 2>&1");
my $build_s = time - $t0;
my $OLD_BIN = "$tree/build/mt5credit";
my $OLD_SO = "$tree/build/ngx_mt5_credit_module.so";
unless (is($build, 0, sprintf('%s builds (make batch module, %.0f s)',
                              $prev{version}, $build_s))
        && -x $OLD_BIN && -f $OLD_SO) {
    diag(`tail -30 $prev_dir/build.log`);
    done_testing;
    exit;
}
note(sprintf('previous release %s (%s) built in %.1f s', $prev{version},
             $short, $build_s));

{
    local $Mt5Credit::Worker::BIN = $OLD_BIN;
    my ($rc, $out) = Mt5Credit::Worker::run(undef, '--version');
    like($out, qr/^mt5credit \Q$prev{version}\E \(commit \Q$short\E\)/,
         "the old mt5credit says it is $prev{version} ($short)");
}

# --- the stack: this tree's schema, the old edge --------------------------

my $st = Mt5Credit::Stack->new(sandbox => { module => $OLD_SO });
my $sb = $st->sb;
my $sim = $st->sim;

my ($newest) = sort { $b cmp $a }
               map { m{/(\d{3})_[^/]*\.sql$} ? $1 : () }
               glob("$ROOT/sql/[0-9][0-9][0-9]_*.sql");
is($sb->sql1('SELECT max(version) FROM mt5credit.schema_migration'),
   $newest + 0, "the database is migrated by this tree to $newest");
cmp_ok($newest - $old_last, '>=', 1,
       "migrations since $prev{version}: " . ($newest - $old_last));

# --- the previous release's schema, by its own migrate, beside this one --

# What a program or a person of the previous release may use must still be
# there for them: every function its group roles may call (by signature),
# every table or view privilege they hold, every column and attribute (of
# a table, a view or a composite type such as work_item) with its type.
# Functions only the owner calls are the schema's own business.
my %catalog = (
    'function grant' => <<'SQL',
SELECT r.rolname || ' ' || p.oid::regprocedure::text
FROM pg_roles r CROSS JOIN pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit' AND r.rolname LIKE 'mt5credit\_%'
  AND r.rolname <> 'mt5credit_owner'
  AND has_function_privilege(r.oid, p.oid, 'EXECUTE') ORDER BY 1
SQL
    'table grant' => <<'SQL',
SELECT r.rolname || ' ' || x.priv || ' ' || c.relname
FROM pg_roles r CROSS JOIN pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN (VALUES ('SELECT'), ('INSERT'), ('UPDATE'), ('DELETE')) x(priv)
WHERE n.nspname = 'mt5credit' AND c.relkind IN ('r', 'v', 'm', 'p', 'S')
  AND r.rolname LIKE 'mt5credit\_%' AND r.rolname <> 'mt5credit_owner'
  AND has_table_privilege(r.oid, c.oid, x.priv) ORDER BY 1
SQL
    'column' => <<'SQL',
SELECT c.relname || '.' || a.attname || ' '
       || format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'mt5credit' AND c.relkind IN ('r', 'v', 'm', 'p', 'c')
  AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1
SQL
);
Mt5Credit::Sandbox::run_cmd("$Mt5Credit::Sandbox::PGBIN/createdb", '-h',
                            '127.0.0.1', '-p', $sb->pg_port, '-U', 'mt5',
                            'previous');
Mt5Credit::Sandbox::run_cmd("$tree/sql/migrate", '-h', '127.0.0.1', '-p',
                            $sb->pg_port, '-U', 'mt5', '-d', 'previous');
my $psb = Mt5Credit::Sandbox->new(pg_port => $sb->pg_port, db => 'previous');
is($psb->sql1('SELECT max(version) FROM mt5credit.schema_migration'),
   $old_last + 0, "$prev{version}'s schema, by its own migrate: $old_last");
for my $what (sort keys %catalog) {
    my %now = map { $_->[0] => 1 } @{ $sb->psql($catalog{$what}) };
    my @then = map { $_->[0] } @{ $psb->psql($catalog{$what}) };
    my @gone = grep { !$now{$_} } @then;
    is(scalar @gone, 0, sprintf('every %s of %s (%d) is still there',
                                $what, $prev{version}, scalar @then))
        or diag(join "\n", @gone);
}

like($sb->error_log, qr/mt5_credit module \Q$prev{version}\E \(commit \Q$short\E\)/,
     "the edge on the stack is $prev{version}'s module");

# this tree's edge, beside it: the same database and Redis, its own nginx
my $nsb = Mt5Credit::Sandbox->new(pg_port => $sb->pg_port,
                                  redis_port => $sb->redis_port);
my $secrets = $nsb->write_file('stripe.secret',
                               "$Mt5Credit::Stack::SECRET\n");
chmod 0600, $secrets;
my $new_edge_conf = <<"HTTP";
    mt5_credit_postgres "%%PG%%";
    mt5_credit_redis %%REDIS%%;
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
        location = /status { mt5_credit_status; }
    }
HTTP

my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
my %old_host = (%fast, state_dir => $sb->dir . '/host-old');
my %new_host = (%fast, state_dir => $sb->dir . '/host-new');

sub start_old_worker {
    local $Mt5Credit::Worker::BIN = $OLD_BIN;
    $st->start_worker('old', %old_host);
}
sub start_new_worker { $st->start_worker('new', %new_host) }

$st->account(login => 70931);

# A deposit, paid by a Stripe event delivered to the edges named in order
# ('old', 'new'); returns { credit, pi, answers => [status, ...] }.
my $seq = 0;
my %payment;    # credit => pi
sub pay_via {
    my (@edges) = @_;
    my $amount = 1000 + ++$seq;
    my $dep = $sb->create_deposit(client => 'alice', login => 70931,
                                  amount => $amount, currency => 'USD');
    my $pi = "pi_prev_${$}_$seq";
    my $body = stripe_event(deposit => $dep, amount => $amount,
                            currency => 'USD', pi => $pi);
    my (@answers, $credit);
    for my $edge (@edges) {
        my $res = ($edge eq 'old' ? $sb : $nsb)->http(
            'POST', '/webhooks/stripe', body => $body,
            headers => stripe_headers($Mt5Credit::Stack::SECRET, $body));
        push @answers, "$edge:$res->{status}";
        $credit //= $1 if $res->{body} =~ /"credit":(\d+)/;
    }
    $credit //= $sb->sql1("SELECT id FROM mt5credit.mt5_credit "
                          . "WHERE provider_payment_id = '$pi'");
    $payment{$credit} = $pi if defined $credit;
    return { credit => $credit, pi => $pi, answers => \@answers };
}

sub all_done {
    my ($ids, $timeout) = @_;
    return Mt5Credit::Worker::wait_for(sub {
        !grep { $st->status_of($_) ne 'done' } @$ids }, $timeout || 60);
}

sub deals_each { return map { scalar @{ $st->deals_of($_) } } @_ }

sub done_by {
    my ($id) = @_;
    return $sb->sql1("SELECT actor FROM mt5credit.credit_history WHERE "
                     . "credit_id = $id AND to_status = 'done'") // '';
}

# --- 1. migrated, nothing upgraded: the old edge, the old worker ---------------

start_old_worker();
my @one = map { pay_via('old') } 1 .. 8;
is(join(' ', map { @{ $_->{answers} } } @one), join(' ', ('old:200') x 8),
   '1: the old edge answers 200 to eight deliveries');
my @ids1 = grep { defined } map { $_->{credit} } @one;
is(scalar @ids1, 8, '1: ... each stored with its credit');
ok(all_done(\@ids1), '1: the old worker credits all eight');
is(join(' ', deals_each(@ids1)), join(' ', (1) x 8), '1: one deal each');
is(join(' ', map { done_by($_) } @ids1), join(' ', ('old') x 8),
   '1: ... every one made by the old worker');
is($sb->sql1("SELECT count(*) FROM mt5credit.webhook_event "
             . "WHERE request_id IS NOT NULL"), 0,
   '1: the events were stored by the old edge (no request id)');

{
    local $Mt5Credit::Worker::BIN = $OLD_BIN;
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c',
                                            $st->worker_config('old',
                                                               %old_host));
    is($rc, 0, "1: the old 'mt5credit status' reads the new schema")
        or diag($out);
}

# --- 2. the edges upgraded: the new edge feeds the old worker -------------------

$nsb->start_nginx($new_edge_conf);
like($nsb->error_log, qr/mt5_credit module \S+ \(commit (?!\Q$short\E)/,
     "2: this tree's edge runs beside it");
my @two = map { pay_via('new') } 1 .. 8;
is(join(' ', map { @{ $_->{answers} } } @two), join(' ', ('new:200') x 8),
   '2: the new edge answers 200 to eight deliveries');
my @ids2 = grep { defined } map { $_->{credit} } @two;
is(scalar @ids2, 8, '2: ... each stored with its credit');
ok(all_done(\@ids2), '2: the old worker credits what the new edge stored');
is(join(' ', deals_each(@ids2)), join(' ', (1) x 8), '2: one deal each');
is(join(' ', map { done_by($_) } @ids2), join(' ', ('old') x 8),
   '2: ... every one made by the old worker');

# the old worker's host is upgraded while a call is in flight: MT5
# executes it and never answers, the old worker is killed
$sim->fault(kind => 'hang_after', endpoint => '/api/trade/balance');
my $calls = $sim->requests('/api/trade/balance') // 0;
my $handed = pay_via('new');
ok(Mt5Credit::Worker::wait_for(sub {
       ($sim->requests('/api/trade/balance') // 0) > $calls }, 20),
   '2: the old worker sent the call');
$st->kill_worker('old');
$sim->clear_faults;
is($st->status_of($handed->{credit}), 'claimed',
   '2: ... and died, its claim held');

# --- 3. rolling: new worker takes over, old and new side by side -----------

start_new_worker();
ok($st->wait_status($handed->{credit}, 'done', 60),
   "3: the new worker settles the dead old worker's claim: done");
is(scalar @{ $st->deals_of($handed->{credit}) }, 1,
   '3: ... with the deal MT5 made for the old worker, and no other');

start_old_worker();
my @three = map { pay_via($_ % 2 ? ('old', 'new') : ('new', 'old')) } 1 .. 40;
my @bad = grep { $_ !~ /:200$/ } map { @{ $_->{answers} } } @three;
is(scalar @bad, 0, '3: 80 deliveries of 40 events to both edges: all 200')
    or diag("@bad");
my @ids3 = grep { defined } map { $_->{credit} } @three;
is(scalar @ids3, 40, '3: ... one credit for each payment');
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE "
             . "provider_payment_id LIKE 'pi_prev_%'"),
   scalar(keys %payment), '3: never a second credit for a payment');
# the first delivery stores an event: half of them the old edge's
is($sb->sql1("SELECT count(*) FILTER (WHERE request_id IS NULL) || ' of ' "
             . "|| count(*) FROM mt5credit.webhook_event"),
   (8 + 20) . ' of ' . (8 + 9 + 40),
   '3: the old edge stored the twenty it was first to get (no request id)');
ok(all_done(\@ids3, 90), '3: old and new workers credit all forty');
is(join(' ', deals_each(@ids3)), join(' ', (1) x 40), '3: one deal each');
my %by;
$by{ done_by($_) }++ for @ids3;
note('3: made by ' . join(', ', map { "$_: $by{$_}" } sort keys %by));
is(join(' ', grep { $_ ne 'old' && $_ ne 'new' } sort keys %by), '',
   '3: ... by the two workers only');

# the previous release's desk reads the events (events_list(), 039's call)
{
    local $Mt5Credit::Worker::BIN = $OLD_BIN;
    my $pi = $three[0]{pi};
    my ($rc, $out) = Mt5Credit::Worker::run(
        $sb, 'events', '--database', 'host=127.0.0.1 port=' . $sb->pg_port
        . ' dbname=mt5credit user=ops_alice', 'list', '--payment', $pi);
    is($rc, 0, "3: the old 'mt5credit events list' runs") or diag($out);
    is(scalar(() = $out =~ /^\d+\s+stripe\s/mg), 1,
       '3: ... and lists the one event of a payment');
}

# --- 4. all upgraded: the old ones stopped ------------------------------------

is($st->stop_worker('old'), 0, '4: the old worker stops cleanly');
is($sb->stop_nginx, 0, '4: the old edge stops cleanly');
my @four = map { pay_via('new') } 1 .. 8;
my @ids4 = grep { defined } map { $_->{credit} } @four;
is(scalar @ids4, 8, '4: the new edge stores eight more');
ok(all_done(\@ids4), '4: the new worker credits them');
is(join(' ', map { done_by($_) } @ids4), join(' ', ('new') x 8),
   '4: ... by itself');
$st->stop_worker('new');

# the previous release's reconciliation of the day, against a settlement
# file of every payment (recon_window(), 040's call)
{
    local $Mt5Credit::Worker::BIN = $OLD_BIN;
    my $at = time;
    my $n = 0;
    my @rows = map { { id => 'txn_prev_' . ++$n, category => 'charge',
                       pi => $payment{$_}, at => $at, fee => 0,
                       gross => $sb->sql1("SELECT paid_amount_minor FROM "
                           . "mt5credit.mt5_credit WHERE id = $_") } }
               sort { $a <=> $b } keys %payment;
    my $conf = Mt5Credit::Worker::config($sb, 'recon',
        servers => [ [ 'live1', $sim, recon_groups => 'real\\usd' ] ],
        recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                          . ' dbname=mt5credit user=recon"',
        recon_out => $sb->dir, recon_match_window => 0);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
        '--provider', 'stripe', '--day', POSIX::strftime('%Y-%m-%d',
                                                         gmtime $at),
        '--tz', 'UTC', '--currency', 'USD', '--format', 'stripe',
        '--settlement', $sb->write_file('settlement.csv',
            Mt5Credit::Settlement::stripe_csv(\@rows)),
        '--control', $sb->write_file('control.csv',
            Mt5Credit::Settlement::control_csv(\@rows)));
    like($out, qr/^run \d+: reconciled /m,
         "4: the old 'mt5credit reconcile' reconciles the day: "
         . scalar(@rows) . ' payments') or diag($out);
}

# --- all of it ---------------------------------------------------------------

my @all = sort { $a <=> $b } keys %payment;
is(scalar @all, 8 + 8 + 1 + 40 + 8, 'payments: ' . scalar @all);
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE status = "
             . "'done' AND provider_payment_id LIKE 'pi_prev_%'"),
   scalar @all, 'every payment credited: done');
my %refs;
$refs{ $_->{Comment} // '' }++
    for grep { $_->{Login} eq '70931' } @{ $sim->ledger->{deals} };
is(scalar(keys %refs), scalar @all, 'MT5 holds one reference per payment');
is(join(' ', grep { $refs{$_} != 1 } sort keys %refs), '',
   '... and one deal under each');

# the logs: nothing that says a binary and the schema disagree
# (PostgreSQL's words for a name, a grant or a type that is not what a
# statement expects, whatever level a program logs them at)
my $schema_words = qr/does not exist|is not unique|permission denied|
                      invalid input syntax|violates|cannot cast/xi;
for my $w (qw(old new)) {
    my @errors = grep { /\b(ERROR|FATAL)\b/ || $_ =~ $schema_words }
                 split /\n/, $st->worker_log($w);
    is(scalar @errors, 0, "the $w worker's log has no error")
        or diag(join "\n", @errors[0 .. ($#errors < 9 ? $#errors : 9)]);
}
for my $edge ([ 'old', $sb ], [ 'new', $nsb ]) {
    my @errors = grep { /\[(error|alert|crit|emerg)\]/ }
                 split /\n/, $edge->[1]->error_log;
    is(scalar @errors, 0, "the $edge->[0] edge's error log has no error")
        or diag(join "\n", @errors[0 .. ($#errors < 9 ? $#errors : 9)]);
}
my @pg_errors;
if (open my $pl, '<', $sb->dir . '/pg.log') {
    @pg_errors = grep { /\b(ERROR|FATAL):/ } <$pl>;
    close $pl;
}
is(scalar @pg_errors, 0, "PostgreSQL logged no error")
    or diag(join '', @pg_errors[0 .. ($#pg_errors < 9 ? $#pg_errors : 9)]);

$nsb->stop_nginx;
done_testing;
