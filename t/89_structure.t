#!/usr/bin/perl
#
# sql/structure.sql is the current schema as one document: what 69
# migrations add up to, read in one place (issue 31, item 7).  Generated
# from a database the migrations built, by pg_dump --schema-only of the
# mt5credit schema (its version lines and per-dump keys left out).  This
# makes impossible:
#   - a migration changing the schema while the document says otherwise:
#     the document is made again here and must be the committed one
#
# After a new migration: MT5CREDIT_WRITE_STRUCTURE=1 t/run-tests
# t/89_structure.t, and commit sql/structure.sql with it.

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $FILE = "$ROOT/sql/structure.sql";

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;
my @args = $sb->psql_args;

my $dump = `pg_dump --schema-only --schema=mt5credit @args`;
is($?, 0, 'pg_dump --schema-only of the migrated database');

# what differs from one dump to the next, or one minor version to the next
my @lines = grep { !/^\\(?:un)?restrict / && !/^-- Dumped (?:from|by) / }
            split /\n/, $dump;
my $doc = <<'HEAD' . join("\n", @lines) . "\n";
--
-- sql/structure.sql: the current schema of mt5credit, as one document.
--
-- Generated from a database that sql/migrate built from sql/NNN_*.sql
-- (pg_dump --schema-only --schema=mt5credit); t/89_structure.t fails when
-- the two disagree.  Read it for the current definition of any table,
-- function or grant; change the schema only with a new migration, then
-- regenerate it: MT5CREDIT_WRITE_STRUCTURE=1 t/run-tests t/89_structure.t
--
HEAD

if ($ENV{MT5CREDIT_WRITE_STRUCTURE}) {
    open my $f, '>', $FILE or die "$FILE: $!";
    print $f $doc;
    close $f or die "$FILE: $!";
    note("wrote $FILE");
}

my $committed = do { local $/; open my $f, '<', $FILE or die "$FILE: $!"; <$f> };
my ($latest) = sort { $b cmp $a } map { m{/(\d{3})_} ? $1 : () }
               glob("$ROOT/sql/[0-9][0-9][0-9]_*.sql");
ok($committed eq $doc, "sql/structure.sql is the schema the migrations "
   . "build, up to $latest") or do {
    my $tmp = $sb->write_file('structure.sql', $doc);
    diag(`diff -u $FILE $tmp | head -40`);
};
like($committed, qr/CREATE FUNCTION mt5credit\.ingest\(/,
     '... one place for, say, ingest()');

done_testing;
