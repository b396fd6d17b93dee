-- Time ranges of the partitioned tables that retention leaves alone until a time: those brought back
-- from an archive by `svc archive restore` (src/ops/archive.ts). `range` is the deliveries
-- partition's name; the attempts and events of the same range are kept with it.
CREATE TABLE partition_holds (
  range text COLLATE "C" PRIMARY KEY,
  until timestamptz NOT NULL
);
