// Wire messages of the core group (v1): the built-in kinds and the whole PodSpec/PodStatus (notation: ./schema.ts).

import type { PackageText } from './schema.js';

export const corePackages: readonly PackageText[] = [
  {
    name: 'core.v1',
    groupPrefix: '',
    version: 'v1',
    text: `
      ObjectReference { kind 1; namespace 2; name 3; uid 4; apiVersion 5; resourceVersion 6; fieldPath 7 }
      LocalObjectReference { name 1 }
      SecretReference { name 1; namespace 2 }
      TypedLocalObjectReference { apiGroup? 1; kind 2; name 3 }

      kind Namespace { metadata:ObjectMeta 1; spec:NamespaceSpec 2; status:NamespaceStatus 3 }
      NamespaceSpec { finalizers:[string] 1 }
      NamespaceStatus { phase 1; conditions:[NamespaceCondition] 2 }
      NamespaceCondition { type 1; status 2; lastTransitionTime:Time 4; reason 5; message 6 }
      kind NamespaceList { metadata:ListMeta 1; items:[Namespace] 2 }

      kind ConfigMap { metadata:ObjectMeta 1; immutable:bool? 4; data:<string> 2; binaryData:<bytes> 3 }
      kind ConfigMapList { metadata:ListMeta 1; items:[ConfigMap] 2 }

      kind Secret {
        metadata:ObjectMeta 1; immutable:bool? 5; data:<bytes> 2; stringData:<string> 4; type 3
      }
      kind SecretList { metadata:ListMeta 1; items:[Secret] 2 }

      kind ServiceAccount {
        metadata:ObjectMeta 1; secrets:[ObjectReference] 2; imagePullSecrets:[LocalObjectReference] 3;
        automountServiceAccountToken:bool? 4
      }
      kind ServiceAccountList { metadata:ListMeta 1; items:[ServiceAccount] 2 }

      kind Service { metadata:ObjectMeta 1; spec:ServiceSpec 2; status:ServiceStatus 3 }
      ServiceSpec {
        ports:[ServicePort] 1; selector:<string> 2; clusterIP 3; clusterIPs:[string] 18; type 4;
        externalIPs:[string] 5; sessionAffinity 7; loadBalancerIP 8; loadBalancerSourceRanges:[string] 9;
        externalName 10; externalTrafficPolicy 11; healthCheckNodePort:int32 12;
        publishNotReadyAddresses:bool 13; sessionAffinityConfig:SessionAffinityConfig? 14;
        ipFamilies:[string] 19; ipFamilyPolicy? 17; allocateLoadBalancerNodePorts:bool? 20;
        loadBalancerClass? 21; internalTrafficPolicy? 22; trafficDistribution? 23
      }
      ServicePort {
        name 1; protocol 2; appProtocol? 6; port:int32! 3; targetPort:IntOrString 4; nodePort:int32 5
      }
      SessionAffinityConfig { clientIP:ClientIPConfig? 1 }
      ClientIPConfig { timeoutSeconds:int32? 1 }
      ServiceStatus { loadBalancer:LoadBalancerStatus 1; conditions:[Condition] 2 }
      LoadBalancerStatus { ingress:[LoadBalancerIngress] 1 }
      LoadBalancerIngress { ip 1; hostname 2; ipMode? 3; ports:[PortStatus] 4 }
      PortStatus { port:int32 1; protocol 2; error? 3 }
      kind ServiceList { metadata:ListMeta 1; items:[Service] 2 }

      kind Endpoints { metadata:ObjectMeta 1; subsets:[EndpointSubset] 2 }
      EndpointSubset {
        addresses:[EndpointAddress] 1; notReadyAddresses:[EndpointAddress] 2; ports:[EndpointPort] 3
      }
      EndpointAddress { ip 1; hostname 3; nodeName? 4; targetRef:ObjectReference? 2 }
      EndpointPort { name 1; port:int32 2; protocol 3; appProtocol? 4 }
      kind EndpointsList { metadata:ListMeta 1; items:[Endpoints] 2 }

      kind Binding { metadata:ObjectMeta 1; target:ObjectReference 2 }

      kind Event {
        metadata:ObjectMeta 1; involvedObject:ObjectReference 2; reason 3; message 4; source:EventSource 5;
        firstTimestamp:Time 6; lastTimestamp:Time 7; count:int32 8; type 9; eventTime:MicroTime 10;
        series:EventSeries? 11; action 12; related:ObjectReference? 13; reportingComponent 14;
        reportingInstance 15
      }
      EventSeries { count:int32 1; lastObservedTime:MicroTime 2 }
      EventSource { component 1; host 2 }
      kind EventList { metadata:ListMeta 1; items:[Event] 2 }

      kind Node { metadata:ObjectMeta 1; spec:NodeSpec 2; status:NodeStatus 3 }
      NodeSpec {
        podCIDR 1; podCIDRs:[string] 7; providerID 3; unschedulable:bool 4; taints:[Taint] 5;
        configSource:NodeConfigSource? 6; externalID 2
      }
      Taint { key 1; value 2; effect 3; timeAdded:Time? 4 }
      NodeConfigSource { configMap:ConfigMapNodeConfigSource? 2 }
      ConfigMapNodeConfigSource { namespace 1; name 2; uid 3; resourceVersion 4; kubeletConfigKey 5 }
      NodeStatus {
        capacity:<Quantity> 1; allocatable:<Quantity> 2; phase 3; conditions:[NodeCondition] 4;
        addresses:[NodeAddress] 5; daemonEndpoints:NodeDaemonEndpoints 6; nodeInfo:NodeSystemInfo 7;
        images:[ContainerImage] 8; volumesInUse:[string] 9; volumesAttached:[AttachedVolume] 10;
        config:NodeConfigStatus? 11
      }
      NodeCondition {
        type 1; status 2; lastHeartbeatTime:Time 3; lastTransitionTime:Time 4; reason 5; message 6
      }
      NodeAddress { type 1; address 2 }
      NodeDaemonEndpoints { kubeletEndpoint:DaemonEndpoint 1 }
      DaemonEndpoint { Port:int32 1 }
      NodeSystemInfo {
        machineID 1; systemUUID 2; bootID 3; kernelVersion 4; osImage 5; containerRuntimeVersion 6;
        kubeletVersion 7; kubeProxyVersion 8; operatingSystem 9; architecture 10
      }
      ContainerImage { names:[string]! 1; sizeBytes:int64 2 }
      AttachedVolume { name 1; devicePath 2 }
      NodeConfigStatus {
        assigned:NodeConfigSource? 1; active:NodeConfigSource? 2; lastKnownGood:NodeConfigSource? 3; error 4
      }
      kind NodeList { metadata:ListMeta 1; items:[Node] 2 }

      kind Pod { metadata:ObjectMeta 1; spec:PodSpec 2; status:PodStatus 3 }
      kind PodList { metadata:ListMeta 1; items:[Pod] 2 }
      PodTemplateSpec { metadata:ObjectMeta 1; spec:PodSpec 2 }
      PodSpec {
        volumes:[Volume] 1; initContainers:[Container] 20; containers:[Container]! 2;
        ephemeralContainers:[EphemeralContainer] 34; restartPolicy 3;
        terminationGracePeriodSeconds:int64? 4; activeDeadlineSeconds:int64? 5; dnsPolicy 6;
        nodeSelector:<string> 7; serviceAccountName 8; serviceAccount 9; automountServiceAccountToken:bool? 21;
        nodeName 10; hostNetwork:bool 11; hostPID:bool 12; hostIPC:bool 13; shareProcessNamespace:bool? 27;
        securityContext:PodSecurityContext? 14; imagePullSecrets:[LocalObjectReference] 15; hostname 16;
        subdomain 17; affinity:Affinity? 18; schedulerName 19; tolerations:[Toleration] 22;
        hostAliases:[HostAlias] 23; priorityClassName 24; priority:int32? 25; dnsConfig:PodDNSConfig? 26;
        readinessGates:[PodReadinessGate] 28; runtimeClassName? 29; enableServiceLinks:bool? 30;
        preemptionPolicy? 31; overhead:<Quantity> 32; topologySpreadConstraints:[TopologySpreadConstraint] 33;
        setHostnameAsFQDN:bool? 35; os:PodOS? 36; hostUsers:bool? 37; schedulingGates:[PodSchedulingGate] 38;
        resourceClaims:[PodResourceClaim] 39; resources:ResourceRequirements? 40
      }
      Volume { name 1; ...volumeSource:VolumeSource 2 }
      VolumeSource {
        hostPath:HostPathVolumeSource? 1; emptyDir:EmptyDirVolumeSource? 2; secret:SecretVolumeSource? 6;
        nfs:NFSVolumeSource? 7; persistentVolumeClaim:PersistentVolumeClaimVolumeSource? 10;
        downwardAPI:DownwardAPIVolumeSource? 16; configMap:ConfigMapVolumeSource? 19;
        projected:ProjectedVolumeSource? 26; csi:CSIVolumeSource? 28; ephemeral:EphemeralVolumeSource? 29
      }
      HostPathVolumeSource { path 1; type? 2 }
      EmptyDirVolumeSource { medium 1; sizeLimit:Quantity? 2 }
      SecretVolumeSource { secretName 1; items:[KeyToPath] 2; defaultMode:int32? 3; optional:bool? 4 }
      NFSVolumeSource { server 1; path 2; readOnly:bool 3 }
      PersistentVolumeClaimVolumeSource { claimName 1; readOnly:bool 2 }
      DownwardAPIVolumeSource { items:[DownwardAPIVolumeFile] 1; defaultMode:int32? 2 }
      DownwardAPIVolumeFile {
        path 1; fieldRef:ObjectFieldSelector? 2; resourceFieldRef:ResourceFieldSelector? 3; mode:int32? 4
      }
      ConfigMapVolumeSource {
        ...localObjectReference:LocalObjectReference 1; items:[KeyToPath] 2; defaultMode:int32? 3;
        optional:bool? 4
      }
      KeyToPath { key 1; path 2; mode:int32? 3 }
      ProjectedVolumeSource { sources:[VolumeProjection] 1; defaultMode:int32? 2 }
      VolumeProjection {
        secret:SecretProjection? 1; downwardAPI:DownwardAPIProjection? 2; configMap:ConfigMapProjection? 3;
        serviceAccountToken:ServiceAccountTokenProjection? 4
      }
      SecretProjection { ...localObjectReference:LocalObjectReference 1; items:[KeyToPath] 2; optional:bool? 4 }
      ConfigMapProjection {
        ...localObjectReference:LocalObjectReference 1; items:[KeyToPath] 2; optional:bool? 4
      }
      DownwardAPIProjection { items:[DownwardAPIVolumeFile] 1 }
      ServiceAccountTokenProjection { audience 1; expirationSeconds:int64? 2; path 3 }
      CSIVolumeSource {
        driver 1; readOnly:bool? 2; fsType? 3; volumeAttributes:<string> 4;
        nodePublishSecretRef:LocalObjectReference? 5
      }
      EphemeralVolumeSource { volumeClaimTemplate:PersistentVolumeClaimTemplate? 1 }
      PersistentVolumeClaimTemplate { metadata:ObjectMeta 1; spec:PersistentVolumeClaimSpec 2 }
      PersistentVolumeClaimSpec {
        accessModes:[string] 1; selector:LabelSelector? 4; resources:VolumeResourceRequirements 2;
        volumeName 3; storageClassName? 5; volumeMode? 6; dataSource:TypedLocalObjectReference? 7
      }
      VolumeResourceRequirements { limits:<Quantity> 1; requests:<Quantity> 2 }

      Container {
        name 1; image 2; command:[string] 3; args:[string] 4; workingDir 5; ports:[ContainerPort] 6;
        envFrom:[EnvFromSource] 19; env:[EnvVar] 7; resources:ResourceRequirements 8;
        resizePolicy:[ContainerResizePolicy] 23; restartPolicy? 24;
        volumeMounts:[VolumeMount] 9; volumeDevices:[VolumeDevice] 21; livenessProbe:Probe? 10;
        readinessProbe:Probe? 11; startupProbe:Probe? 22; lifecycle:Lifecycle? 12; terminationMessagePath 13;
        terminationMessagePolicy 20; imagePullPolicy 14; securityContext:SecurityContext? 15; stdin:bool 16;
        stdinOnce:bool 17; tty:bool 18
      }
      EphemeralContainer { ...ephemeralContainerCommon:EphemeralContainerCommon 1; targetContainerName 2 }
      EphemeralContainerCommon {
        name 1; image 2; command:[string] 3; args:[string] 4; workingDir 5; ports:[ContainerPort] 6;
        envFrom:[EnvFromSource] 19; env:[EnvVar] 7; resources:ResourceRequirements 8;
        resizePolicy:[ContainerResizePolicy] 23; restartPolicy? 24;
        volumeMounts:[VolumeMount] 9; volumeDevices:[VolumeDevice] 21; livenessProbe:Probe? 10;
        readinessProbe:Probe? 11; startupProbe:Probe? 22; lifecycle:Lifecycle? 12; terminationMessagePath 13;
        terminationMessagePolicy 20; imagePullPolicy 14; securityContext:SecurityContext? 15; stdin:bool 16;
        stdinOnce:bool 17; tty:bool 18
      }
      ContainerPort { name 1; hostPort:int32 2; containerPort:int32! 3; protocol 4; hostIP 5 }
      ContainerResizePolicy { resourceName 1; restartPolicy 2 }
      EnvFromSource { prefix 1; configMapRef:ConfigMapEnvSource? 2; secretRef:SecretEnvSource? 3 }
      ConfigMapEnvSource { ...localObjectReference:LocalObjectReference 1; optional:bool? 2 }
      SecretEnvSource { ...localObjectReference:LocalObjectReference 1; optional:bool? 2 }
      EnvVar { name 1; value 2; valueFrom:EnvVarSource? 3 }
      EnvVarSource {
        fieldRef:ObjectFieldSelector? 1; resourceFieldRef:ResourceFieldSelector? 2;
        configMapKeyRef:ConfigMapKeySelector? 3; secretKeyRef:SecretKeySelector? 4
      }
      ObjectFieldSelector { apiVersion 1; fieldPath 2 }
      ResourceFieldSelector { containerName 1; resource 2; divisor:Quantity 3 }
      ConfigMapKeySelector { ...localObjectReference:LocalObjectReference 1; key 2; optional:bool? 3 }
      SecretKeySelector { ...localObjectReference:LocalObjectReference 1; key 2; optional:bool? 3 }
      ResourceRequirements { limits:<Quantity> 1; requests:<Quantity> 2; claims:[ResourceClaim] 3 }
      ResourceClaim { name 1; request 2 }
      VolumeMount {
        name 1; readOnly:bool 2; recursiveReadOnly? 7; mountPath 3; subPath 4; mountPropagation? 5;
        subPathExpr 6
      }
      VolumeDevice { name 1; devicePath 2 }
      Probe {
        ...handler:ProbeHandler 1; initialDelaySeconds:int32 2; timeoutSeconds:int32 3; periodSeconds:int32 4;
        successThreshold:int32 5; failureThreshold:int32 6; terminationGracePeriodSeconds:int64? 7
      }
      ProbeHandler {
        exec:ExecAction? 1; httpGet:HTTPGetAction? 2; tcpSocket:TCPSocketAction? 3; grpc:GRPCAction? 4
      }
      ExecAction { command:[string] 1 }
      HTTPGetAction { path 1; port:IntOrString 2; host 3; scheme 4; httpHeaders:[HTTPHeader] 5 }
      HTTPHeader { name 1; value 2 }
      TCPSocketAction { port:IntOrString 1; host 2 }
      GRPCAction { port:int32 1; service? 2 }
      Lifecycle { postStart:LifecycleHandler? 1; preStop:LifecycleHandler? 2 }
      LifecycleHandler {
        exec:ExecAction? 1; httpGet:HTTPGetAction? 2; tcpSocket:TCPSocketAction? 3; sleep:SleepAction? 4
      }
      SleepAction { seconds:int64 1 }
      SecurityContext {
        capabilities:Capabilities? 1; privileged:bool? 2; seLinuxOptions:SELinuxOptions? 3;
        windowsOptions:WindowsSecurityContextOptions? 10; runAsUser:int64? 4; runAsGroup:int64? 8;
        runAsNonRoot:bool? 5; readOnlyRootFilesystem:bool? 6; allowPrivilegeEscalation:bool? 7; procMount? 9;
        seccompProfile:SeccompProfile? 11; appArmorProfile:AppArmorProfile? 12
      }
      Capabilities { add:[string] 1; drop:[string] 2 }
      SELinuxOptions { user 1; role 2; type 3; level 4 }
      WindowsSecurityContextOptions {
        gmsaCredentialSpecName? 1; gmsaCredentialSpec? 2; runAsUserName? 3; hostProcess:bool? 4
      }
      SeccompProfile { type 1; localhostProfile? 2 }
      AppArmorProfile { type 1; localhostProfile? 2 }
      PodSecurityContext {
        seLinuxOptions:SELinuxOptions? 1; windowsOptions:WindowsSecurityContextOptions? 8; runAsUser:int64? 2;
        runAsGroup:int64? 6; runAsNonRoot:bool? 3; supplementalGroups:[int64] 4; fsGroup:int64? 5;
        sysctls:[Sysctl] 7; fsGroupChangePolicy? 9; seccompProfile:SeccompProfile? 10;
        appArmorProfile:AppArmorProfile? 11; supplementalGroupsPolicy? 12; seLinuxChangePolicy? 13
      }
      Sysctl { name 1; value 2 }
      Affinity {
        nodeAffinity:NodeAffinity? 1; podAffinity:PodAffinity? 2; podAntiAffinity:PodAntiAffinity? 3
      }
      NodeAffinity {
        requiredDuringSchedulingIgnoredDuringExecution:NodeSelector? 1;
        preferredDuringSchedulingIgnoredDuringExecution:[PreferredSchedulingTerm] 2
      }
      NodeSelector { nodeSelectorTerms:[NodeSelectorTerm]! 1 }
      NodeSelectorTerm { matchExpressions:[NodeSelectorRequirement] 1; matchFields:[NodeSelectorRequirement] 2 }
      NodeSelectorRequirement { key 1; operator 2; values:[string] 3 }
      PreferredSchedulingTerm { weight:int32 1; preference:NodeSelectorTerm 2 }
      PodAffinity {
        requiredDuringSchedulingIgnoredDuringExecution:[PodAffinityTerm] 1;
        preferredDuringSchedulingIgnoredDuringExecution:[WeightedPodAffinityTerm] 2
      }
      PodAntiAffinity {
        requiredDuringSchedulingIgnoredDuringExecution:[PodAffinityTerm] 1;
        preferredDuringSchedulingIgnoredDuringExecution:[WeightedPodAffinityTerm] 2
      }
      PodAffinityTerm {
        labelSelector:LabelSelector? 1; namespaces:[string] 2; topologyKey 3; namespaceSelector:LabelSelector? 4;
        matchLabelKeys:[string] 5; mismatchLabelKeys:[string] 6
      }
      WeightedPodAffinityTerm { weight:int32 1; podAffinityTerm:PodAffinityTerm 2 }
      Toleration { key 1; operator 2; value 3; effect 4; tolerationSeconds:int64? 5 }
      HostAlias { ip 1; hostnames:[string] 2 }
      PodDNSConfig { nameservers:[string] 1; searches:[string] 2; options:[PodDNSConfigOption] 3 }
      PodDNSConfigOption { name 1; value? 2 }
      PodReadinessGate { conditionType 1 }
      TopologySpreadConstraint {
        maxSkew:int32 1; topologyKey 2; whenUnsatisfiable 3; labelSelector:LabelSelector? 4; minDomains:int32? 5;
        nodeAffinityPolicy? 6; nodeTaintsPolicy? 7; matchLabelKeys:[string] 8
      }
      PodOS { name 1 }
      PodSchedulingGate { name 1 }
      PodResourceClaim { name 1; resourceClaimName? 3; resourceClaimTemplateName? 4 }
      PodStatus {
        phase 1; conditions:[PodCondition] 2; message 3; reason 4; nominatedNodeName 11; hostIP 5;
        hostIPs:[HostIP] 16; podIP 6; podIPs:[PodIP] 12; startTime:Time? 7;
        initContainerStatuses:[ContainerStatus] 10; containerStatuses:[ContainerStatus] 8; qosClass 9;
        ephemeralContainerStatuses:[ContainerStatus] 13
      }
      PodCondition {
        type 1; status 2; lastProbeTime:Time 3; lastTransitionTime:Time 4; reason 5; message 6
      }
      PodIP { ip 1 }
      HostIP { ip 1 }
      ContainerStatus {
        name! 1; state:ContainerState 2; lastState:ContainerState 3; ready:bool! 4; restartCount:int32! 5;
        image! 6; imageID! 7; containerID 8; started:bool? 9
      }
      ContainerState {
        waiting:ContainerStateWaiting? 1; running:ContainerStateRunning? 2;
        terminated:ContainerStateTerminated? 3
      }
      ContainerStateWaiting { reason 1; message 2 }
      ContainerStateRunning { startedAt:Time 1 }
      ContainerStateTerminated {
        exitCode:int32! 1; signal:int32 2; reason 3; message 4; startedAt:Time 5; finishedAt:Time 6;
        containerID 7
      }
    `,
  },
];
