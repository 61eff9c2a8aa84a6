import numpy as np, ot, warnings
warnings.simplefilter("ignore")
from dpadapt.bench.common import cached_pair
from dpadapt.transport.coupling import normalised_cost
for s,t in [("dslr","webcam"),("webcam","dslr")]:
    pair = cached_pair("decaf6", s, t); Xs, ys, Xt, yt = np.asarray(pair.Xs,float), pair.ys, np.asarray(pair.Xt,float), pair.yt_test
    ps, pt = np.bincount(ys,minlength=10)/len(ys), np.bincount(yt,minlength=10)/len(yt)
    tv = 0.5*np.abs(ps-pt).sum()
    ns, nt = len(ys), len(Xt); a, b = np.full(ns,1/ns), np.full(nt,1/nt)
    C = ((Xs[:,None,:]-Xt[None,:,:])**2).sum(-1)
    G = ot.emd(a,b,normalised_cost(C))
    same = (G * (ys[:,None]==yt[None,:])).sum()
    # OT with target marginal reweighted to the source's class proportions (oracle, diagnosis only)
    b2 = ps[yt]/np.bincount(yt,minlength=10)[yt]; b2/=b2.sum()
    G2 = ot.emd(a,b2,normalised_cost(C)); same2 = (G2 * (ys[:,None]==yt[None,:])).sum()
    print(s,t,"TV(class proportions)",round(tv,3),"exact OT same-class mass",round(same,3),"| oracle class-reweighted target marginal:",round(same2,3))
    from dpadapt.transport.coupling import barycentric_map
    from dpadapt.models import make_classifier
    for name, GG in [("uniform", G), ("oracle-reweighted", G2)]:
        img = barycentric_map(GG, Xt)
        print(s,t,name,"exact-OT images -> logreg acc", round(make_classifier("logreg", 0).fit(img, ys).score(Xt, yt),4), flush=True)
