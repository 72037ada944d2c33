"""The controller: elected through ``/controller``, it decides leadership and tells the brokers.

``ControllerCore`` has no Ray and no kazoo: it takes one event (``events``) and the current
``ControllerContext`` (``context``) and returns what to do as data: conditional ZooKeeper writes,
control requests per broker and state-change log lines; its operations beyond elections and brokers
are mixins: new partitions (``partition_growth``), topic deletion (``deletion_steps`` over
``topic_deletion``), partition reassignment (``partition_reassignment``) and preferred-replica
elections with the automatic leader balance (``preferred_election``). Leader choice
(``election``), replica placement (``replica_assignment``), the partition and replica state machines
(``state_machines``) and the per-broker request batch (``request_batch``) are plain functions and
tables. The actor shell
owns the mailbox (``mailbox``), the kazoo session and the Ray handles, carries the effects out, and
sends control requests through one ``ControllerChannelManager`` per broker (in order, answered,
retried), whose response errors come back as events.

May import ``rafka.actors.zk``, ``rafka.actors.names``, ``rafka.actors.broker.config``,
``rafka.log.config`` and ``rafka.protocol``; only the actor shell and the channels import Ray or
kazoo.
"""
