// Wire messages of apps/v1, policy/v1, autoscaling/v1, coordination/v1 and events/v1 (notation: ./schema.ts).

import type { PackageText } from './schema.js';

export const otherPackages: readonly PackageText[] = [
  {
    name: 'apps.v1',
    groupPrefix: 'apps',
    version: 'v1',
    text: `
      kind Deployment { metadata:ObjectMeta 1; spec:DeploymentSpec 2; status:DeploymentStatus 3 }
      DeploymentSpec {
        replicas:int32? 1; selector:LabelSelector? 2; template:core.v1.PodTemplateSpec 3;
        strategy:DeploymentStrategy 4; minReadySeconds:int32 5; revisionHistoryLimit:int32? 6; paused:bool 7;
        progressDeadlineSeconds:int32? 9
      }
      DeploymentStrategy { type 1; rollingUpdate:RollingUpdateDeployment? 2 }
      RollingUpdateDeployment { maxUnavailable:IntOrString? 1; maxSurge:IntOrString? 2 }
      DeploymentStatus {
        observedGeneration:int64 1; replicas:int32 2; updatedReplicas:int32 3; readyReplicas:int32 7;
        availableReplicas:int32 4; unavailableReplicas:int32 5; conditions:[DeploymentCondition] 6;
        collisionCount:int32? 8
      }
      DeploymentCondition {
        type 1; status 2; lastUpdateTime:Time 6; lastTransitionTime:Time 7; reason 4; message 5
      }
      kind DeploymentList { metadata:ListMeta 1; items:[Deployment] 2 }
    `,
  },
  {
    name: 'policy.v1',
    groupPrefix: 'policy',
    version: 'v1',
    text: `kind Eviction { metadata:ObjectMeta 1; deleteOptions:DeleteOptions? 2 }`,
  },
  {
    name: 'autoscaling.v1',
    groupPrefix: 'autoscaling',
    version: 'v1',
    text: `
      kind Scale { metadata:ObjectMeta 1; spec:ScaleSpec 2; status:ScaleStatus 3 }
      ScaleSpec { replicas:int32? 1 }
      ScaleStatus { replicas:int32! 1; selector 2 }
    `,
  },
  {
    name: 'coordination.v1',
    groupPrefix: 'coordination',
    version: 'v1',
    text: `
      kind Lease { metadata:ObjectMeta 1; spec:LeaseSpec 2 }
      LeaseSpec {
        holderIdentity? 1; leaseDurationSeconds:int32? 2; acquireTime:MicroTime? 3; renewTime:MicroTime? 4;
        leaseTransitions:int32? 5; strategy? 6; preferredHolder? 7
      }
      kind LeaseList { metadata:ListMeta 1; items:[Lease] 2 }
    `,
  },
  {
    name: 'events.v1',
    groupPrefix: 'events',
    version: 'v1',
    text: `
      kind Event {
        metadata:ObjectMeta 1; eventTime:MicroTime 2; series:EventSeries? 3; reportingController 4;
        reportingInstance 5; action 6; reason 7; regarding:core.v1.ObjectReference 8;
        related:core.v1.ObjectReference? 9; note 10; type 11; deprecatedSource:core.v1.EventSource 12;
        deprecatedFirstTimestamp:Time 13; deprecatedLastTimestamp:Time 14; deprecatedCount:int32 15
      }
      EventSeries { count:int32 1; lastObservedTime:MicroTime 2 }
      kind EventList { metadata:ListMeta 1; items:[Event] 2 }
    `,
  },
];
