-- A call that names its class (Cls.f(), Base.f(self)) runs that class's f,
-- never an override: rag._graph_edges does not list it among the callers of
-- the methods overriding f, as it does a call on a typed receiver (x.f() with
-- x: Cls may run a subclass's f). References stored before keep false (the
-- former reading) until their file changes.
ALTER TABLE rag.refs ADD COLUMN explicit_class boolean NOT NULL DEFAULT false;
